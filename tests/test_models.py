"""Sizing real models from their config.json: spellings, rules, sizes, errors."""

from __future__ import annotations

import json
import os
import tempfile
import unittest

import gqa
from gqa import GQAError
from gqa_tools.sizer import (ModelShape, Split, cache_bytes, decode_roofline, max_requests,
                        parse_bandwidth, parse_flops, parse_size, tensor_parallel)
from tests.helpers import ROOT, run_gqa

EXAMPLES = os.path.join(ROOT, "examples", "configs")


def shape(**config):
    return ModelShape.from_config(config)


def run(*argv):
    """`gqa config ARGV`: (exit status, stdout, stderr)."""
    return run_gqa("config", *argv)


class Examples(unittest.TestCase):

    def test_known_sizes_per_token(self):
        # (file, method, h, g, head dim, bytes per token in bf16, worked by hand)
        known = [
            ("llama-2-7b.json", "MHA", 32, 32, 128, 2 * 32 * 32 * 128 * 2),
            ("llama-2-70b.json", "GQA", 64, 8, 128, 2 * 80 * 8 * 128 * 2),
            ("mistral-7b-v0.1.json", "GQA", 32, 8, 128, 2 * 32 * 8 * 128 * 2),
            ("falcon-40b.json", "GQA", 128, 8, 64, 2 * 60 * 8 * 64 * 2),
            ("falcon-7b.json", "MQA", 71, 1, 64, 2 * 32 * 1 * 64 * 2),
            ("qwen2-7b.json", "GQA", 28, 4, 128, 2 * 28 * 4 * 128 * 2),
            ("gemma-2b.json", "MQA", 8, 1, 256, 2 * 18 * 1 * 256 * 2),
            ("starcoder.json", "MQA", 48, 1, 128, 2 * 40 * 1 * 128 * 2),
        ]
        for name, method, h, g, d, per_token in known:
            s = ModelShape.from_config(os.path.join(EXAMPLES, name))
            self.assertEqual((s.method, s.heads, s.kv_heads, s.head_dim), (method, h, g, d), name)
            self.assertEqual(cache_bytes(s, dtype="bf16"), per_token, name)
        llama70 = ModelShape.from_config(os.path.join(EXAMPLES, "llama-2-70b.json"))
        self.assertEqual(cache_bytes(llama70, dtype="bf16"), 327680)
        self.assertEqual(cache_bytes(llama70, context=4096, batch=2, dtype="fp8"), 163840 * 4096 * 2)
        self.assertEqual(cache_bytes(llama70, dtype="fp32", kv_heads=64), 2 * 80 * 64 * 128 * 4)


class Spellings(unittest.TestCase):

    def test_every_spelling(self):
        for h_name in ("num_attention_heads", "n_head", "num_heads"):
            for l_name in ("num_hidden_layers", "n_layer", "num_layers"):
                for d_name in ("hidden_size", "n_embd", "d_model"):
                    s = shape(**{h_name: 8, l_name: 3, d_name: 64})
                    self.assertEqual((s.heads, s.layers, s.hidden_size, s.head_dim, s.kv_heads),
                                     (8, 3, 64, 8, 8), (h_name, l_name, d_name))
        base = dict(num_attention_heads=8, num_hidden_layers=2, hidden_size=64)
        for kv_name in ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"):
            self.assertEqual(shape(**base, **{kv_name: 2}).kv_heads, 2, kv_name)

    def test_no_kv_heads_means_mha_and_null_is_unset(self):
        base = dict(num_attention_heads=8, num_hidden_layers=2, hidden_size=64)
        self.assertEqual(shape(**base).kv_heads, 8)
        self.assertEqual(shape(**base, num_key_value_heads=None).kv_heads, 8)
        self.assertEqual(shape(**base, head_dim=None).head_dim, 8)

    def test_falcon_rules(self):
        base = dict(num_attention_heads=128, num_hidden_layers=60, hidden_size=8192)
        self.assertEqual(shape(**base, multi_query=True).kv_heads, 1)
        self.assertEqual(shape(**base, multi_query=True, num_kv_heads=128).kv_heads, 1)
        self.assertEqual(shape(**base, multi_query=True, new_decoder_architecture=True,
                               num_kv_heads=8).kv_heads, 8)
        self.assertEqual(shape(**base, multi_query=False, num_kv_heads=16).kv_heads, 16)
        self.assertEqual(shape(**base, new_decoder_architecture=True).kv_heads, 128)

    def test_chatglm_group_count_counts_only_with_multi_query_attention(self):
        base = dict(num_attention_heads=32, num_layers=28, hidden_size=4096, multi_query_group_num=2)
        self.assertEqual(shape(**base, multi_query_attention=True).kv_heads, 2)
        self.assertEqual(shape(**base, multi_query_attention=False).kv_heads, 32)

    def test_nested_text_config(self):
        s = shape(model_type="llava", vision_config={"num_attention_heads": 16, "hidden_size": 1024},
                  text_config={"num_attention_heads": 32, "num_key_value_heads": 8,
                               "num_hidden_layers": 32, "hidden_size": 4096})
        self.assertEqual((s.heads, s.kv_heads, s.layers, s.head_dim), (32, 8, 32, 128))

    def test_explicit_head_dim_wins(self):
        s = shape(num_attention_heads=8, num_key_value_heads=1, num_hidden_layers=18,
                  hidden_size=3072, head_dim=256)
        self.assertEqual(s.head_dim, 256)
        self.assertNotEqual(s.head_dim, 3072 // 8)


class Errors(unittest.TestCase):

    def write(self, text):
        tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8")
        with tmp:
            tmp.write(text)
        self.addCleanup(os.unlink, tmp.name)
        return tmp.name

    def test_not_json_says_where(self):
        path = self.write('{\n  "n_head": 8,\n  "n_layer" 2\n}')
        with self.assertRaisesRegex(GQAError, r"is not JSON: line 3, column 13"):
            ModelShape.from_config(path)
        with self.assertRaisesRegex(GQAError, r"is not a JSON object but a list"):
            ModelShape.from_config(self.write("[1, 2]"))

    def test_missing_field_names_the_spellings(self):
        with self.assertRaisesRegex(GQAError, r"no query head count: tried num_attention_heads, n_head, num_heads"):
            shape(num_hidden_layers=2, hidden_size=64)
        with self.assertRaisesRegex(GQAError, r"no layer count: tried num_hidden_layers, n_layer, num_layers"):
            shape(num_attention_heads=2, hidden_size=64)
        with self.assertRaisesRegex(GQAError, r"no hidden size and no head_dim: tried hidden_size, n_embd, d_model"):
            shape(num_attention_heads=2, num_hidden_layers=2)

    def test_g_not_dividing_h(self):
        with self.assertRaisesRegex(GQAError, r"could not be loaded: 6 key/value heads do not divide 32 "
                                              r"query heads; g would divide for g = 1, 2, 4, 8, 16, 32"):
            shape(num_attention_heads=32, num_key_value_heads=6, num_hidden_layers=2, hidden_size=4096)
        with self.assertRaisesRegex(GQAError, r"could not be loaded: 64 key/value heads do not divide 32"):
            shape(num_attention_heads=32, num_key_value_heads=64, num_hidden_layers=2, hidden_size=4096)

    def test_non_positive_and_non_integer_numbers(self):
        with self.assertRaisesRegex(GQAError, r"num_hidden_layers must be between 1 and 10\*\*12; got 0"):
            shape(num_attention_heads=2, num_hidden_layers=0, hidden_size=64)
        with self.assertRaisesRegex(GQAError, r"num_key_value_heads must be between 1 and 10\*\*12; got -1"):
            shape(num_attention_heads=2, num_hidden_layers=1, hidden_size=64, num_key_value_heads=-1)
        with self.assertRaisesRegex(GQAError, r"n_head must be a whole number; got .8.5."):
            shape(n_head=8.5, n_layer=1, n_embd=64)
        with self.assertRaisesRegex(GQAError, r"n_head must be a whole number; got .True."):
            shape(n_head=True, n_layer=1, n_embd=64)
        with self.assertRaisesRegex(GQAError, r"hidden size 100 is not a multiple of 8 query heads"):
            shape(n_head=8, n_layer=1, n_embd=100)


class Computations(unittest.TestCase):

    def test_tensor_parallel_replication_rule(self):
        self.assertEqual(tensor_parallel(64, 8, 4), Split(4, 2, 1))
        self.assertEqual(tensor_parallel(64, 8, 8), Split(8, 1, 1))
        self.assertEqual(tensor_parallel(64, 8, 16), Split(16, 1, 2))
        self.assertEqual(tensor_parallel(48, 1, 8), Split(8, 1, 8))
        self.assertEqual(tensor_parallel(32, 32, 1), Split(1, 32, 1))
        with self.assertRaisesRegex(GQAError, r"neither of g=8 key/value heads and 3 devices divides the other"):
            tensor_parallel(24, 8, 3)
        with self.assertRaisesRegex(GQAError, r"5 devices do not divide h=64 query heads"):
            tensor_parallel(64, 8, 5)
        with self.assertRaisesRegex(GQAError, r"devices must be a positive int; got 0"):
            tensor_parallel(64, 8, 0)

    def test_max_requests_is_a_floor(self):
        self.assertEqual(max_requests(memory=100, weights=10, request_bytes=30), 3)
        self.assertEqual(max_requests(memory=100, weights=100, request_bytes=30), 0)
        self.assertEqual(max_requests(memory=10, weights=100, request_bytes=30), 0)

    def test_roofline_by_hand(self):
        s = shape(num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=1, hidden_size=8)
        # weights 1000 bytes of bf16 = 500 parameters; cache at context 10: 2*1*2*2*10*2 = 160 bytes
        r = decode_roofline(s, context=10, batch=1, dtype="bf16", weights=1000, weight_dtype="bf16",
                            bandwidth=1160.0, flops=1e9, kv_heads=2)
        self.assertEqual((r.bytes_read, r.flops, r.bound), (1160, 2 * (500 + 2 * 1 * 4 * 2 * 10), "memory"))
        self.assertAlmostEqual(r.seconds, 1.0)
        slow = decode_roofline(s, context=10, batch=1, dtype="bf16", weights=1000, weight_dtype="bf16",
                               bandwidth=1e12, flops=1320.0, kv_heads=2)
        self.assertEqual(slow.bound, "compute")
        self.assertAlmostEqual(slow.seconds, 1.0)

    def test_units(self):
        self.assertEqual(parse_size("80GiB"), 80 * 2 ** 30)
        self.assertEqual(parse_size("80GB"), 80 * 10 ** 9)
        self.assertEqual(parse_size("80 gib"), 80 * 2 ** 30)
        self.assertEqual(parse_size("1.5TiB"), 3 * 2 ** 39)
        self.assertEqual(parse_size("4096"), 4096)
        self.assertEqual(parse_size("512KiB"), 2 ** 19)
        for bad in ("80G", "eighty", "-5GB", "80GiBs", "", "1e9"):
            with self.assertRaisesRegex(GQAError, r"is not a size: give bytes, or a number with one of"):
                parse_size(bad, "--memory")
        self.assertEqual(parse_bandwidth("2039GB/s"), 2039e9)
        self.assertEqual(parse_bandwidth("3.35 TB/s"), 3.35e12)
        self.assertEqual(parse_flops("312T"), 312e12)
        self.assertEqual(parse_flops("312TFLOPS"), 312e12)
        self.assertEqual(parse_flops("989 TFLOP/s"), 989e12)
        self.assertEqual(parse_flops("3.12e14"), 3.12e14)
        with self.assertRaisesRegex(GQAError, r"is not a rate"):
            parse_flops("fast")


class CommandLine(unittest.TestCase):

    def test_table(self):
        status, out, _ = run(os.path.join(EXAMPLES, "llama-2-70b.json"), "--memory", "80GiB")
        self.assertEqual(status, 0)
        self.assertIn("GQA, 80 layers, h=64 query heads, g=8 key/value heads", out)
        self.assertRegex(out, r"bytes per token +2\.5 MiB +320 KiB +40 KiB")
        # (80 GiB - 0) // (327,680 x 4096): 64 requests; MHA: 8; MQA: 512
        self.assertRegex(out, r"requests that fit +8 +64 +512")

    def test_json_has_exact_bytes(self):
        status, out, _ = run(os.path.join(EXAMPLES, "falcon-40b.json"), "--json", "--context", "2048",
                             "--tp", "16", "--memory", "80GB", "--hardware", "h100-sxm",
                             "--weights", "80GB")
        self.assertEqual(status, 0)
        data = json.loads(out)
        model = data["columns"][1]
        self.assertEqual(model["bytes_per_token"], 2 * 60 * 8 * 64 * 2)
        self.assertEqual(model["bytes_per_request"], 2 * 60 * 8 * 64 * 2 * 2048)
        self.assertEqual(model["tp"], {"kv_heads_per_device": 1, "replication": 2,
                                       "bytes_per_device": 2 * 60 * 1 * 64 * 2 * 2048,
                                       "bytes_all_devices": 16 * 2 * 60 * 64 * 2 * 2048})
        self.assertEqual(model["max_requests"], (80 * 10 ** 9 - 5 * 10 ** 9) // (2 * 60 * 64 * 2 * 2048))
        self.assertIn("datasheet", data["hardware"]["source"])
        self.assertEqual([c["kv_heads"] for c in data["columns"]], [128, 8, 1])

    def test_a_g_that_the_devices_cannot_split_is_refused_in_its_column(self):
        status, out, _ = run(os.path.join(EXAMPLES, "qwen2-7b.json"), "--tp", "7")
        self.assertEqual(status, 0)
        # h=28, tp=7: MHA (g=28) splits 4 per device, MQA (g=1) is replicated 7 times,
        # and the model's g=4 and 7 devices do not divide each other.
        self.assertRegex(out, r"kv heads per device \(tp=7\) +4 +refused +1")
        self.assertIn("GQA g=4: tensor_parallel: neither of g=4 key/value heads and 7 devices", out)

    def test_bad_input_is_a_clear_message(self):
        llama = os.path.join(EXAMPLES, "llama-2-70b.json")
        for argv, message in (([llama, "--memory", "80 gigs"], "is not a size"),
                              ([llama, "--dtype", "fp4"], "dtype 'fp4' is not one of"),
                              ([llama, "--context", "0"], "--context must be between 1 and 10**12; got 0"),
                              ([llama, "--bandwidth", "2TB/s"], "give both --bandwidth and --flops"),
                              # An option that would be left unused is refused, never dropped.
                              ([llama, "--hardware", "h100-sxm", "--flops", "1T"],
                               "--hardware h100-sxm names the bandwidth and the compute rate; give it, or "
                               "--bandwidth and --flops, not both"),
                              ([llama, "--source", "100"], "--source is the encoder's length of an "
                               "encoder-decoder model; meta-llama/Llama-2-70b-hf caches no source tokens"),
                              ([llama, "--image-tokens", "64", "--lang", "ja"], "--image-tokens は、画像への"
                               "クロスアテンションを持つモデルの画像トークン数です。meta-llama/Llama-2-70b-hf は"),
                              ([llama, "--tp", "3"], "--tp 3 does not divide the model's 64 query heads; "
                                                     "valid --tp: 1, 2, 4, 8, 16, 32, 64"),
                              ([os.path.join(EXAMPLES, "nope.json")], "cannot read it")):
            status, _, err = run(*argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(message, err)


class CacheDtype(unittest.TestCase):
    """The cache's own dtype: the config's, --dtype over it, and a line saying which."""

    def config(self, **extra):
        with open(os.path.join(EXAMPLES, "llama-3.1-8b.json"), encoding="utf-8") as f:
            config = json.load(f)
        config.update(extra)
        tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8")
        with tmp:
            json.dump(config, tmp)
        self.addCleanup(os.unlink, tmp.name)
        return tmp.name

    def test_the_configs_dtype_is_the_caches(self):
        # Llama-3.1-8B: 32 layers x 2 x 8 K/V heads x 128, at one byte a value in fp8.
        fp8 = 32 * 2 * 8 * 128 * 1
        for extra, said in (({"kv_cache_dtype": "fp8"}, "kv_cache_dtype 'fp8'"),
                            ({"quantization_config": {"quant_method": "compressed-tensors", "kv_cache_scheme": {
                                "num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False}}},
                             "quantization_config.kv_cache_scheme (8-bit float)"),
                            ({"quantization_config": {"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"}},
                             "quantization_config.kv_cache_quant_algo 'FP8'")):
            path = self.config(**extra)
            s = ModelShape.from_config(path)
            self.assertEqual((s.kv_dtype, cache_bytes(s)), ("fp8", fp8), extra)
            status, out, _ = run(path, "--json")
            data = json.loads(out)
            self.assertEqual((data["columns"][1]["bytes_per_token"], data["settings"]["dtype_from"]),
                             (fp8, f"the config's {said}"))
            status, out, _ = run(path)
            self.assertIn(f"KV cache in fp8 (1 byte per value, the config's {said})", out)
            status, out, _ = run(path, "--dtype", "bf16")           # --dtype overrides it, and says so
            self.assertIn(f"KV cache in bf16 (2 bytes per value, given with --dtype; the config's {said} "
                          f"says fp8)", out)
            self.assertRegex(out, r"bytes per token +512 KiB +128 KiB")

    def test_no_dtype_named_is_bf16_and_says_so(self):
        for extra in ({}, {"kv_cache_dtype": "auto"},       # "auto": the model's own dtype, 16-bit
                      {"transformers.js_config": {"kv_cache_dtype": {"fp16": "float16"}}}):
            status, out, _ = run(self.config(**extra))
            self.assertIn("KV cache in bf16 (2 bytes per value, the default: the config names no cache dtype)",
                          out, extra)

    def test_a_dtype_no_rule_reads_is_refused(self):
        for extra, field in (({"kv_cache_dtype": "fp4"}, "kv_cache_dtype 'fp4'"),
                             ({"quantization_config": {"kv_cache_scheme": {"num_bits": 4, "type": "int"}}},
                              "quantization_config.kv_cache_scheme")):
            status, _, err = run(self.config(**extra))
            self.assertEqual(status, 2)
            self.assertIn(f"cannot size: {field}", err)


class Weights(unittest.TestCase):
    """--weights from a checkpoint's index, or a model folder holding config.json and it."""

    def folder(self, total=16_060_522_496, config="llama-3.1-8b.json"):
        folder = tempfile.mkdtemp()
        self.addCleanup(__import__("shutil").rmtree, folder)
        with open(os.path.join(EXAMPLES, config), encoding="utf-8") as f, \
                open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as out:
            out.write(f.read())
        with open(os.path.join(folder, "model.safetensors.index.json"), "w", encoding="utf-8") as out:
            json.dump({"metadata": {"total_size": total}, "weight_map": {"lm_head.weight": "model-1.safetensors"}}, out)
        return folder

    def test_the_index_gives_the_weights(self):
        folder = self.folder()
        index = os.path.join(folder, "model.safetensors.index.json")
        # (80 GiB - 16,060,522,496 bytes) // (32 x 2 x 8 x 128 x 2 bytes x 8,192 positions)
        fits = (80 * 2 ** 30 - 16_060_522_496) // (32 * 2 * 8 * 128 * 2 * 8192)
        for argv in ([folder], [os.path.join(folder, "config.json")],            # the index beside it
                     [os.path.join(EXAMPLES, "llama-3.1-8b.json"), "--weights", index],
                     [os.path.join(EXAMPLES, "llama-3.1-8b.json"), "--weights", folder]):
            status, out, err = run(*argv, "--memory", "80GiB", "--context", "8192", "--json")
            self.assertEqual(status, 0, err)
            data = json.loads(out)
            self.assertEqual((data["settings"]["weights"], data["columns"][1]["max_requests"]),
                             (16_060_522_496, fits), argv)
            self.assertEqual(data["settings"]["weights_from"], f"{index}'s metadata.total_size")
        status, out, _ = run(folder, "--memory", "80GiB")
        self.assertIn("; the weights from " + index + "'s metadata.total_size", out)

    def test_a_bad_index_is_a_clear_message(self):
        empty = tempfile.mkdtemp()
        self.addCleanup(os.rmdir, empty)
        llama = os.path.join(EXAMPLES, "llama-3.1-8b.json")
        status, _, err = run(llama, "--weights", empty)
        self.assertIn("the folder holds no model.safetensors.index.json", err)
        status, _, err = run(llama, "--weights", os.path.join(self.folder(total=-1), "model.safetensors.index.json"))
        self.assertIn("metadata.total_size must be a whole number of bytes", err)


class IgnoreAndNotes(unittest.TestCase):

    def test_ignore_of_a_key_the_config_does_not_have_is_an_error(self):
        status, _, err = run(os.path.join(EXAMPLES, "llama-2-7b.json"), "--ignore", "nosuchkey")
        self.assertEqual(status, 2)
        self.assertIn("--ignore nosuchkey: the config has no key 'nosuchkey'", err)

    def test_an_unknown_key_is_a_note_on_the_first_line(self):
        s = shape(model_type="llama", num_hidden_layers=2, num_attention_heads=4, hidden_size=32,
                  my_custom_flag=True)
        self.assertEqual(s.notes[0], "NOTE: my_custom_flag true: read by no rule and not known to leave "
                                     "the cache alone; the sizes assume it does")
        self.assertEqual(cache_bytes(s, dtype="fp8"), 2 * 2 * 4 * 8)


class WholeBlock(unittest.TestCase):
    """The MLP's width and matrices: read where configs give them, never guessed."""

    def test_the_reports_block_models_are_what_their_configs_say(self):
        from gqa_tools.report import costs as report_costs
        for model, file in zip(report_costs.BLOCK_MODELS, ("llama-2-7b.json", "llama-2-70b.json")):
            s = ModelShape.from_config(os.path.join(EXAMPLES, file))
            self.assertEqual((model.heads, model.kv_heads, model.head_dim, model.d_model, model.d_ff,
                              model.mlp_matrices),
                             (s.heads, s.kv_heads, s.head_dim, s.hidden_size, s.intermediate_size,
                              s.mlp_matrices), file)

    def test_an_unknown_model_type_has_no_mlp_matrices(self):
        s = shape(num_hidden_layers=2, num_attention_heads=4, hidden_size=8, intermediate_size=32,
                  model_type="somethingnew")
        self.assertEqual((s.intermediate_size, s.mlp_matrices), (32, None))
        self.assertEqual(shape(num_hidden_layers=2, num_attention_heads=4, hidden_size=8).intermediate_size,
                         None)

    def tables(self, *argv):
        return run_gqa("tables", *argv)

    def test_tables_from_a_config_show_the_whole_block(self):
        status, out, _ = self.tables("--config", os.path.join(EXAMPLES, "llama-2-70b.json"), "--context", "4096")
        self.assertEqual(status, 0)
        # Per token: q, o 2 x 8192 x 8192; k, v 2 x 8192 x 8 x 128; MLP 3 x 8192 x 28672;
        # body 2 x 64 x 128 x 4097 / 2 (causal, 4,096 positions).
        proj, kv, mlp, body = 2 * 8192 * 8192, 2 * 8192 * 8 * 128, 3 * 8192 * 28672, 64 * 128 * 4097
        self.assertIn(f"| GQA    |  8 | {proj:>19,} | {kv:>19,} | {body:>14,} | {mlp:,} | {proj + kv + mlp + body:>13,} |",
                      out)
        status, out, _ = self.tables("--config", os.path.join(EXAMPLES, "mistral-7b-v0.1.json"))
        self.assertIn("No whole-block view: the config gives no MLP width", out)

    def test_tables_bad_sizes_are_usage_errors(self):
        for argv in (["--d-ff", "0"], ["--heads", "-1"], ["--config", os.path.join(EXAMPLES, "nope.json")]):
            status, _, err = self.tables(*argv)
            self.assertEqual(status, 2, argv)
            self.assertNotIn("Traceback", err)


def example(name, **options):
    return ModelShape.from_config(os.path.join(EXAMPLES, name), **options)


class Families(unittest.TestCase):
    """Every family sized by its own rule; the figures are worked by hand here, from the
    fields of the example configs (bf16: 2 bytes a value)."""

    def test_mla_caches_one_latent_per_token_and_layer(self):
        s = example("deepseek-v3.json")
        self.assertEqual(s.method, "MLA")
        self.assertEqual([(g.rule, g.layers, g.latent) for g in s.groups], [("mla", 61, 512 + 64)])
        self.assertEqual(cache_bytes(s, dtype="bf16"), 61 * 576 * 2)                  # 35,136 values
        self.assertEqual(cache_bytes(s, context=32768, dtype="bf16"), 61 * 576 * 32768 * 2)
        self.assertEqual(s.max_context, 163840)
        status, out, _ = run(os.path.join(EXAMPLES, "deepseek-v3.json"), "--context", "32768", "--json")
        data = json.loads(out)
        model, as_mha = data["columns"]
        self.assertEqual(model["bytes_per_request"], 61 * 576 * 32768 * 2)
        self.assertEqual(as_mha["bytes_per_token"], 61 * 2 * 128 * 128 * 2)       # DeepSeek-V2's comparison
        status, out, _ = run(os.path.join(EXAMPLES, "deepseek-v3.json"), "--context", "32768", "--tp", "8")
        self.assertRegex(out, r"cache per device +2.145 GiB")                        # the whole latent on each

    def test_hybrids_count_only_their_attention_layers(self):
        jamba = example("jamba-v0.1.json")                # attention where i % 8 == 4: 4 of 32 layers
        self.assertEqual([(g.rule, g.layers) for g in jamba.groups], [("none", 28), ("full", 4)])
        self.assertEqual(cache_bytes(jamba, dtype="bf16"), 4 * 2 * 8 * 128 * 2)
        nemotron = shape(num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=2, hidden_size=64,
                         hybrid_override_pattern="M-M*-M")
        self.assertEqual([(g.rule, g.layers) for g in nemotron.groups], [("none", 3), ("full", 1)])
        minimax = shape(num_hidden_layers=4, num_attention_heads=8, hidden_size=64, attn_type_list=[0, 0, 0, 1])
        self.assertEqual(cache_bytes(minimax, dtype="fp8"), 1 * 2 * 8 * 8)
        qwen3_next = shape(num_hidden_layers=48, num_attention_heads=16, num_key_value_heads=2, head_dim=256,
                           hidden_size=2048, full_attention_interval=4)
        self.assertEqual([(g.rule, g.layers) for g in qwen3_next.groups], [("none", 36), ("full", 12)])

    def test_windows_and_chunks_stop_a_requests_cache_growing(self):
        gemma = example("gemma-3-12b.json")              # no head_dim: the class default, 256
        self.assertEqual(gemma.head_dim, 256)
        self.assertEqual([(g.rule, g.layers, g.window) for g in gemma.groups],
                         [("sliding", 40, 1024), ("full", 8, None)])
        per_layer = 2 * 8 * 256 * 2
        self.assertEqual(cache_bytes(gemma, context=32768, dtype="bf16"),
                         40 * per_layer * 1024 + 8 * per_layer * 32768)
        oss = example("gpt-oss-20b.json")
        self.assertEqual(cache_bytes(oss, context=32768, dtype="bf16"),
                         12 * 2 * 8 * 64 * 2 * 128 + 12 * 2 * 8 * 64 * 2 * 32768)
        mistral = example("mistral-7b-v0.1.json")
        self.assertEqual(cache_bytes(mistral, context=32768, dtype="bf16"), 32 * 2 * 8 * 128 * 2 * 4096)
        gemma2 = shape(model_type="gemma2", num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                       hidden_size=64, sliding_window=16)
        self.assertEqual([(g.rule, g.layers) for g in gemma2.groups], [("sliding", 2), ("full", 2)])
        llama4 = shape(num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, hidden_size=64,
                       attention_chunk_size=8, no_rope_layers=[1, 1, 1, 0])
        self.assertEqual(cache_bytes(llama4, context=100, dtype="fp8"), 3 * 2 * 2 * 8 * 8 + 1 * 2 * 2 * 8 * 100)
        qwen2 = shape(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, sliding_window=8,
                      use_sliding_window=False)
        self.assertEqual([g.rule for g in qwen2.groups], ["full"])
        v02 = shape(model_type="mistral", num_hidden_layers=2, num_attention_heads=4, hidden_size=32,
                    sliding_window=None)                 # an explicit null: no window
        self.assertEqual([g.rule for g in v02.groups], ["full"])

    def test_other_spellings(self):
        dbrx = example("dbrx-base.json")
        self.assertEqual((dbrx.layers, dbrx.heads, dbrx.kv_heads, dbrx.head_dim), (40, 48, 8, 128))
        mpt = example("mpt-7b.json")
        self.assertEqual((mpt.layers, mpt.heads, mpt.kv_heads, mpt.head_dim, mpt.max_context),
                         (32, 32, 32, 128, 2048))
        llava = example("llava-1.5-7b.json")             # the Llama defaults fill the text_config
        self.assertEqual((llava.layers, llava.heads, llava.kv_heads, llava.head_dim), (32, 32, 32, 128))
        self.assertTrue(any("llama default" in n for n in llava.notes))

    def test_encoder_decoder_caches_its_tokens_and_the_source(self):
        t5 = example("t5-11b.json")                      # head dim d_kv = 128, not 1024 / 128
        self.assertEqual((t5.heads, t5.head_dim, t5.layers), (128, 128, 24))
        self.assertEqual(cache_bytes(t5, context=100, source=500, dtype="bf16"),
                         24 * 2 * 128 * 128 * 2 * (100 + 500))

    def test_never_a_silent_wrong_number(self):
        base = dict(num_hidden_layers=2, num_attention_heads=4, hidden_size=32)
        mystery = dict(base, layer_types=["full_attention", "mystery_attention"])
        for ignore in ((), ("layer_types",)):           # --ignore cannot make a number of it
            with self.assertRaises(GQAError) as caught:
                ModelShape.from_config(mystery, ignore=ignore)
            self.assertIn("cannot size: layer_types 'mystery_attention' changes the cache in a way no "
                          "rule reads", str(caught.exception))
            self.assertNotIn("--ignore", str(caught.exception))
        with self.assertRaisesRegex(GQAError, r"kv_lora_rank without qk_rope_head_dim"):
            shape(**base, kv_lora_rank=512)
        with self.assertRaisesRegex(GQAError, r"cannot size: attention_chunk_size 8 changes the cache"):
            shape(**base, attention_chunk_size=8)              # no list of layers, and no class default
        with self.assertRaisesRegex(GQAError, r"layer_types must list the 2 layers"):
            shape(**base, layer_types=["full_attention"])
        with self.assertRaisesRegex(GQAError, r"attn_config.attn_type 'grouped_query_attention' without kv_n_heads"):
            shape(n_layers=2, n_heads=4, d_model=32, attn_config={"attn_type": "grouped_query_attention"})

    def test_the_command_says_which_rule_and_which_context(self):
        status, out, _ = run(os.path.join(EXAMPLES, "gemma-3-12b.json"))
        self.assertEqual(status, 0)
        self.assertIn("48 layers (40 sliding window 1,024; 8 full attention)", out.splitlines()[0])
        self.assertIn("context 131,072 (the model's max_position_embeddings)", out)
        status, out, _ = run(os.path.join(EXAMPLES, "t5-11b.json"))
        self.assertIn("the config gives no maximum; the default 4096", out)
        status, out, _ = run(os.path.join(EXAMPLES, "jamba-v0.1.json"), "--layers", "8")
        self.assertIn("--layers 8 given by hand", out)
        path = os.path.join(EXAMPLES, "llama-2-7b.json")
        status, out, _ = run(path, "--window", "1024", "--context", "4096", "--json")
        self.assertEqual(json.loads(out)["columns"][0]["bytes_per_request"], 32 * 2 * 32 * 128 * 2 * 1024)


class Hardened(unittest.TestCase):
    """Whatever the file or the option, one line on stderr and exit 2: no traceback, no hang."""

    def write(self, data):
        tmp = tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False)
        with tmp:
            tmp.write(data)
        self.addCleanup(os.unlink, tmp.name)
        return tmp.name

    def refused(self, *argv, says):
        status, out, err = run(*argv)
        self.assertEqual(status, 2, argv)
        self.assertIn(says, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertLess(len(err), 400)

    def test_files_that_are_not_config_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "fifo")
            os.mkfifo(fifo)
            self.refused(fifo, says="not a regular file")                  # would block in open()
        self.refused("/dev/zero", says="not a regular file")               # would read for ever
        self.refused(self.write('{"a": 1}'.encode("utf-16")), says="not UTF-8 text")
        self.refused(self.write(b"\x00\xff" * 100), says="not UTF-8 text")
        self.refused(self.write(b"[" * 100000 + b"]" * 100000), says="cannot be read as JSON")
        self.refused(self.write(b"{\"num_hidden_layers\": " + b"9" * 5000 + b"}"), says=".json")   # read or refused by JSON
        self.refused(self.write(b" " * (5 << 20)), says="larger than 4 MiB")

    def test_numbers_out_of_range(self):
        llama = os.path.join(EXAMPLES, "llama-2-7b.json")
        self.refused(self.write(json.dumps({"num_hidden_layers": 10 ** 320, "num_attention_heads": 8,
                                            "hidden_size": 64}).encode()), says="num_hidden_layers")
        self.refused(llama, "--context", str(10 ** 320), says="--context must be between 1 and 10**12")
        self.refused(llama, "--memory", "9" * 400, says="--memory")
        self.refused(llama, "--bandwidth", "0", "--flops", "0", says="must be more than 0")
        self.refused(llama, "--bandwidth", "2TB/s", "--flops", "1e400", says="must be more than 0")
        self.refused(self.write(json.dumps({"num_hidden_layers": 2, "num_attention_heads": 2 ** 61 - 1,
                                            "num_key_value_heads": 7, "hidden_size": 64}).encode()),
                     says="num_attention_heads")
        status, out, _ = run(llama, "--bandwidth", "2TB/s", "--flops", "1e15", "--json")
        self.assertNotIn("Infinity", out)


if __name__ == "__main__":
    unittest.main()

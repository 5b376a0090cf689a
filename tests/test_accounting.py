"""The sizer's accounting (gqa_tools/sizer/accounting.py): every key of a config is read,
known not to change the cache, or refused by name; never skipped in silence."""

from __future__ import annotations

import json
import os
import unittest

from gqa import GQAError
from gqa_tools.sizer import ModelShape, cache_bytes, per_position
from tests.helpers import ROOT
from tests.sizer_support import EXAMPLES, run, shape


class NeverSilent(unittest.TestCase):
    """Every key is read, known not to change the cache, or refused by name."""

    base = dict(model_type="llama", num_hidden_layers=2, num_attention_heads=4, hidden_size=32)

    def test_an_unread_structural_key_is_an_error_naming_it(self):
        for key in ("num_kv_shared_layers", "global_head_dim", "attention_window_size", "layers_block_type",
                    "cross_attention_layers_extra", "ssm_state_size", "encoder_layers", "local_window",
                    "chunk_count", "linear_num_heads", "decoder_block_count", "mamba_expand"):
            with self.assertRaisesRegex(GQAError, key):
                shape(**self.base, **{key: 3})

    def test_ignore_turns_it_into_a_warning_on_the_first_line(self):
        s = ModelShape.from_config(dict(self.base, global_head_dim=512), ignore=["global_head_dim"])
        self.assertTrue(s.notes[0].startswith("WARNING: global_head_dim 512 is not read"))
        path = os.path.join(EXAMPLES, "gemma-2b.json")
        status, out, _ = run(path, "--ignore", "hidden_size")        # a read key: nothing to warn of
        self.assertFalse(out.startswith("WARNING"))

    def test_keys_known_not_to_change_the_cache_pass(self):
        harmless = dict(vocab_size=32000, rope_theta=1e4, rope_scaling={"type": "linear"}, num_experts=8,
                        num_experts_per_tok=2, attention_dropout=0.0, initializer_range=0.02,
                        bos_token_id=1, tie_word_embeddings=False, rms_norm_eps=1e-6, torch_dtype="bfloat16",
                        use_cache=True, moe_layer_freq=1, something_new=3)
        s = shape(**self.base, **harmless)
        self.assertEqual(cache_bytes(s, dtype="fp8"), 2 * 2 * 4 * 8)

    def test_nested_objects_are_accounted_too(self):
        with self.assertRaisesRegex(GQAError, r"attn_config\.sliding_layers"):
            shape(model_type="mpt", n_layers=2, n_heads=4, d_model=32,
                  attn_config={"attn_type": "multihead_attention", "sliding_layers": 2})
        with self.assertRaisesRegex(GQAError, r"config: global_window 5 is read by no rule"):
            shape(model_type="gemma3", global_window=5,
                  text_config={"model_type": "gemma3_text", "num_hidden_layers": 2, "num_attention_heads": 2,
                               "hidden_size": 16, "sliding_window_pattern": 2})

    def test_a_model_type_without_a_row_warns_first_naming_it_and_the_fields(self):
        s = shape(model_type="brand_new", num_hidden_layers=2, num_attention_heads=4, hidden_size=32)
        self.assertEqual(s.notes[0], "WARNING: model_type 'brand_new' has no row in the sizer's table of "
                                     "families: sized by the generic rules from hidden_size, "
                                     "num_attention_heads, num_hidden_layers; check the layers against "
                                     "the model's code")
        path = os.path.join(ROOT, "examples", "configs", "llama-2-7b.json")
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        config["model_type"] = "brand_new"
        status, out, _ = run(*self._write(config))
        self.assertTrue(out.startswith("WARNING: model_type 'brand_new'"), out[:80])

    def _write(self, config):
        import tempfile
        tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8")
        with tmp:
            json.dump(config, tmp)
        self.addCleanup(os.unlink, tmp.name)
        return [tmp.name]

    def test_keys_published_configs_carry_beside_the_sizes(self):
        # Falcon-7B's parallel_attn, StarCoder's attention_softmax_in_fp32, Whisper's
        # num_hidden_layers (the encoder's) and layerdrops: read or known, not refused.
        falcon = shape(model_type="falcon", num_hidden_layers=32, num_attention_heads=71, hidden_size=4544,
                       multi_query=True, parallel_attn=True, apply_residual_connection_post_layernorm=False)
        self.assertEqual(cache_bytes(falcon, dtype="fp8"), 32 * 2 * 1 * 64)
        code = shape(model_type="gpt_bigcode", n_layer=2, n_head=4, n_embd=32, multi_query=True,
                     attention_softmax_in_fp32=True, pre_allocate_kv_cache=False, scale_attn_weights=True)
        self.assertEqual(cache_bytes(code, dtype="fp8"), 2 * 2 * 1 * 8)
        whisper = shape(model_type="whisper", is_encoder_decoder=True, d_model=64, decoder_layers=2,
                        decoder_attention_heads=4, encoder_layers=3, num_hidden_layers=3, decoder_layerdrop=0.0)
        self.assertEqual(per_position(whisper, dtype="fp8")["token"], 2 * 2 * 4 * 16)

    def test_two_spellings_of_one_size_must_agree(self):
        with self.assertRaisesRegex(GQAError, r"num_heads 16 and num_attention_heads 32 disagree"):
            shape(model_type="lfm2", num_hidden_layers=2, num_attention_heads=32, num_heads=16,
                  hidden_size=2048, full_attn_idxs=[1])
        self.assertEqual(shape(model_type="lfm2", num_hidden_layers=2, num_attention_heads=32, num_heads=32,
                               hidden_size=2048, full_attn_idxs=[1]).heads, 32)
        with self.assertRaisesRegex(GQAError, r"sliding_window_size 2048 and sliding_window 4096 disagree"):
            shape(model_type="gemma2", num_hidden_layers=2, num_attention_heads=4, hidden_size=32,
                  sliding_window=4096, sliding_window_size=2048)

    def test_kv_sharing_outside_its_families_is_refused(self):
        for ignore in ((), ("num_kv_shared_layers",)):
            with self.assertRaisesRegex(GQAError, r"cannot size: num_kv_shared_layers 1 changes the cache "
                                                  r"in a way no rule reads \(which layers share"):
                ModelShape.from_config(dict(self.base, num_kv_shared_layers=1), ignore=ignore)


if __name__ == "__main__":
    unittest.main()

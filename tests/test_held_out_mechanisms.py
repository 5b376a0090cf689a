"""The mechanisms behind the third held-out set's four silent wrongs, each on its published config
(examples/configs/generalising/, sources in tests/test_generalising.py) and on a made-up config that
has the mechanism under another name, so that a rule reads the mechanism, not the family.

Bytes are worked by hand from each model's code: layers x 2 (K and V) x key/value heads x head dim
x 2 bytes (bf16)."""

from __future__ import annotations

import json
import os
import unittest

from gqa import GQAError
from gqa_tools.sizer import ModelShape, per_position
from tests.helpers import ROOT

FOLDER = os.path.join(ROOT, "examples", "configs", "generalising")


def config(name):
    with open(os.path.join(FOLDER, name), encoding="utf-8") as f:
        return json.load(f)


def token_bytes(data):
    return per_position(ModelShape.from_config(data), dtype="bf16")["token"]


class KeyValueHeadsFromTheFieldTheCodeReads(unittest.TestCase):

    def test_plamo_13b_takes_g_from_n_shared_head_not_the_decoy(self):
        # PlamoAttention: h / n_shared_head = 40 / 8 = 5 K/V heads (llama.cpp's converter writes 5);
        # num_key_value_heads 40 repeats h.  Head dim 5120 / 40 = 128.
        plamo = config("plamo-13b.json")
        self.assertEqual(token_bytes(plamo), 40 * 2 * 5 * 128 * 2)
        notes = "\n".join(ModelShape.from_config(plamo).notes)
        self.assertIn("num_key_value_heads 40 set aside", notes)

    def test_a_group_size_that_does_not_divide_is_refused(self):
        made_up = dict(model_type="brand_new", num_hidden_layers=2, num_attention_heads=8, hidden_size=64,
                       n_shared_head=4)
        self.assertEqual(token_bytes(made_up), 2 * 2 * 2 * 8 * 2)
        with self.assertRaisesRegex(GQAError, "n_shared_head 3 does not divide 8 query heads"):
            ModelShape.from_config(dict(made_up, n_shared_head=3))


class AnEncoderByItsObjective(unittest.TestCase):

    def test_neobert_is_an_encoder_by_its_masked_lm_class(self):
        shape = ModelShape.from_config(config("neobert.json"))
        self.assertEqual((shape.method, per_position(shape, dtype="bf16")["token"]), ("no KV cache", 0))
        self.assertIn("auto_map names AutoModelForMaskedLM", "\n".join(shape.notes))

    def test_a_generative_class_beside_it_makes_it_a_decoder(self):
        made_up = dict(model_type="brand_new", architectures=["BrandNewLMHead"], num_hidden_layers=3,
                       num_attention_heads=4, hidden_size=32,
                       auto_map={"AutoModelForMaskedLM": "m.A", "AutoModelForCausalLM": "m.B"})
        self.assertEqual(token_bytes(made_up), 3 * 2 * 4 * 8 * 2)
        del made_up["auto_map"]["AutoModelForCausalLM"]
        self.assertEqual(token_bytes(made_up), 0)


class AWrapperSizedByItsLanguageModel(unittest.TestCase):

    def test_kosmos_2_is_its_text_decoder_never_0(self):
        # Kosmos2TextConfig: layers 24, attention_heads 32, embed_dim 2048 (head dim 64), every layer's
        # K and V cached (keys_to_ignore_at_inference: past_key_values).
        self.assertEqual(token_bytes(config("kosmos-2-patch14-224.json")), 24 * 2 * 32 * 64 * 2)

    def test_a_tower_beside_a_contrastive_projection_is_an_encoder(self):
        kosmos = config("kosmos-2-patch14-224.json")
        shape = ModelShape.from_config(dict(kosmos, projection_dim=512))
        self.assertEqual((shape.method, per_position(shape, dtype="bf16")["token"]), ("no KV cache", 0))


class AHybridIsNeverSizedAsIfEveryLayerCached(unittest.TestCase):

    def test_phi_4_mini_flash_is_refused_for_its_layer_period(self):
        # 9 of its 32 layers hold K and V (8 windowed, 1 full); no rule reads mb_per_layer's layout.
        with self.assertRaisesRegex(GQAError, r"mb_per_layer 2 .*a layer of another kind \(a state's, not a "
                                              r"cache's\) every 2 layers"):
            ModelShape.from_config(config("phi-4-mini-flash-reasoning.json"))

    def test_a_period_of_0_says_no_other_kind(self):
        made_up = dict(model_type="brand_new", num_hidden_layers=4, num_attention_heads=4, hidden_size=32,
                       mamba_per_layer=2)
        with self.assertRaisesRegex(GQAError, "mamba_per_layer 2 .*every 2 layers"):
            ModelShape.from_config(made_up)
        self.assertEqual(token_bytes(dict(made_up, mamba_per_layer=0)), 4 * 2 * 4 * 8 * 2)


if __name__ == "__main__":
    unittest.main()

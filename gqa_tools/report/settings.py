"""gqa_tools.report.settings: what a report is computed for, and its options' limits and help.

Config's fields are the command's options (--heads, --run-context, ...);
its defaults are the committed report.md's.
"""

from __future__ import annotations

import shlex
from typing import NamedTuple, Optional

from gqa_grader.language import i18n
from gqa_grader.language.i18n import N_


class Config(NamedTuple):
    """What the report is computed for; the defaults are the committed report.md."""
    heads: int = 32             # h, query heads, in both configurations
    head_dim: int = 128         # d of the real-size configuration
    layers: int = 32
    context: int = 4096         # positions of the real-size configuration
    batch: int = 32             # for the decode traffic ratio
    run_head_dim: int = 4       # the small configuration the code actually runs
    run_d_model: int = 32
    run_context: int = 12
    run_layers: int = 2
    seed: int = 0
    seeds: int = 5              # seeds seed, seed + 1, ..., for the output difference

    @property
    def d_model(self) -> int:
        return self.heads * self.head_dim

    def command(self, module: Optional[str] = None, handout: bool = False, out: Optional[str] = None) -> str:
        """The command that writes the report: with a module, or in a handout (whose report
        is its own gqa.py's without one), in the language in use; to out when given (the
        --out given: the command writes the same file)."""
        parts = (["python -m gqa report"] + ([f"--module {shlex.quote(module)}"] if module else [])
                 + ([f"--out {shlex.quote(out)}"] if out else []))
        if (module or handout) and i18n.language() != "en":
            parts.append(f"--lang {i18n.language()}")
        for name, value in self._asdict().items():
            parts.append(f"--{name.replace('_', '-')} {value}")
        return " ".join(parts)


# The largest value of each option: the closed forms take any size, but the
# small configuration is run in pure Python, and past these a report would
# take far more than minutes.
LIMITS = {"heads": 256, "head_dim": 65536, "layers": 10 ** 6, "context": 10 ** 9, "batch": 10 ** 9,
          "run_head_dim": 64, "run_d_model": 512, "run_context": 256, "run_layers": 8,
          "seed": 10 ** 9, "seeds": 100}

# What each option means, for --help: one line each (translated where shown).
OPTION_HELP = {
    "heads": N_("query heads h of both configurations"),
    "head_dim": N_("head dim d of the real-size configuration (counted, not run)"),
    "layers": N_("layers of the real-size configuration"),
    "context": N_("positions of the real-size configuration (and of the whole-block view)"),
    "batch": N_("sequences decoded together, for section 7's reads per multiplication"),
    "run_head_dim": N_("head dim of the small configuration that the code runs"),
    "run_d_model": N_("model width of the small configuration"),
    "run_context": N_("positions of the small configuration"),
    "run_layers": N_("layers the small configuration decodes through"),
    "seed": N_("the first seed of the random weights and inputs"),
    "seeds": N_("how many seeds (seed, seed + 1, ...) the measured figures are averaged over"),
}

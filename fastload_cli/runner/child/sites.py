"""Inside the child: who built a DataLoader. The training framework among its callers, and the line
of code that called its constructor (what ``fastload fix`` rewrites): the first caller outside
torch and fastload, past the ``__init__`` of a DataLoader subclass calling ``super().__init__``.
"""

from __future__ import annotations

from typing import Any

# Training frameworks that build a DataLoader for the user, or wrap the user's, in the order that
# decides which one the user configures it through: Hugging Face's Trainer builds its loader and
# accelerate then wraps it, but the user sets it in TrainingArguments.
FRAMEWORKS = ("transformers", "timm", "lightning", "pytorch_lightning", "accelerate")
# Callers that are never the user's line: torch's own (a DataLoader built inside torch), fastload's.
NOT_THE_CALLER = ("torch", "fastload_cli")


def framework_on_stack(frame: Any, depth: int = 40) -> str | None:
    """The training framework among the callers that are constructing a DataLoader, or None."""
    seen: set[str] = set()
    while frame is not None and depth > 0:
        seen.add(_package(frame))
        frame, depth = frame.f_back, depth - 1
    return next((name for name in FRAMEWORKS if name in seen), None)


def call_site(frame: Any, loader: Any, depth: int = 40) -> tuple[str, int] | None:
    """The file and line that called ``loader``'s constructor: ``frame`` is its first caller."""
    while frame is not None and depth > 0:
        subclass_init = frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is loader
        if not subclass_init and _package(frame) not in NOT_THE_CALLER:
            return frame.f_code.co_filename, frame.f_lineno
        frame, depth = frame.f_back, depth - 1
    return None


def _package(frame: Any) -> str:
    return str(frame.f_globals.get("__name__", "")).split(".")[0]

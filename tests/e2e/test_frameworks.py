"""Scripts written in the idioms of the frameworks people train with, diagnosed unmodified:
Lightning's ``Trainer.fit``, Hugging Face's ``Trainer`` (on text, and on images attached with
``datasets``' ``set_transform`` as its image-classification example does), timm's ``create_loader``,
an albumentations ``Compose`` called with keywords,
an accelerate ``prepare`` loop, and a script shaped like the PyTorch ImageNet example.

Each must give the right batch counts, every mode applied through the framework's own wrappers
(the synthetic replay, no-aug's stand-ins, a workers=N override), a sane verdict, and nothing
left running (the autouse fixture checks that). The frameworks come from the optional
``frameworks`` extra; without it these tests are skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS, assert_verdict, run_fastload

pytestmark = pytest.mark.slow
FRAMEWORKS = SCRIPTS / "frameworks"
BATCHES = 12
NAMES = ("lightning", "transformers", "accelerate", "timm", "datasets", "albumentations")
MISSING = [name for name in NAMES if importlib.util.find_spec(name) is None]
needs_frameworks = pytest.mark.skipif(
    bool(MISSING), reason=f"the frameworks extra is not installed ({', '.join(MISSING)}): pip install '.[frameworks]'"
)


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of JPEGs of varied sizes, one sub-folder per class."""
    sys.path.insert(0, str(FRAMEWORKS))
    try:
        from make_jpegs import make  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(FRAMEWORKS))
    return make(tmp_path_factory.mktemp("jpegs"), per_class=48, classes=4)


def diagnose(script: str, *script_args: str, modes: str | None = None) -> dict:
    options = ["--max-batches", str(BATCHES), "--fixed-batches", "--no-sweep", "--json", "-", "-q"]
    if modes:
        options += ["--modes", modes]
    done = run_fastload("diagnose", str(FRAMEWORKS / script), *options, "--", *script_args, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def evidence(report: dict) -> str:
    """The verdict and the findings it rests on, to read when an assertion on it fails."""
    verdict = report["verdict"]
    return "\n".join([f"{verdict['bottleneck']}: {verdict['label']}", *verdict["evidence"], *verdict["caveats"]])


def check_runs(report: dict, modes: set[str]) -> None:
    runs = {r["mode"]: r for r in report["runs"]}
    assert set(runs) == modes
    for mode, run in runs.items():
        assert run["status"] == "ok", (mode, run["error"])
        assert run["stop_reason"] == "enough-batches", mode  # the stop reached the script through the framework
        assert run["batches"] == BATCHES, mode
    caveats = " ".join(report["verdict"]["caveats"])
    assert "replayed no batch" not in caveats
    if "synthetic" in runs:  # the replay went through the framework's loader: a ceiling was read from it
        # Its value is a timing (about 1.0 on a compute-bound script, either side by noise); that a
        # number was read, or the run was judged too disturbed to give one, is what the wiring decides.
        broken = "comparison is broken" in caveats
        assert report["verdict"]["speedup_ceiling"] is not None or broken
        assert runs["synthetic"]["data_wait_fraction"] < 0.05


@needs_frameworks
def test_lightning_trainer_fit_with_heavy_augmentation() -> None:
    report = diagnose("lightning_train.py")
    check_runs(report, {"real", "synthetic", "no-aug"})
    replaced = [s["original"].split("(")[0] for s in report["substitutions"]]
    assert {"RandomResizedCrop", "ColorJitter", "GaussianBlur"} <= set(replaced)
    assert_verdict(report, "cpu")  # five random transforms on two busy cores


@needs_frameworks
def test_hugging_face_trainer_applies_every_mode_through_training_arguments() -> None:
    report = diagnose("hf_trainer.py", "--max-steps", "400", modes="real,synthetic,workers=0")
    check_runs(report, {"real", "synthetic", "workers=0"})
    workers = {r["mode"]: r["num_workers"] for r in report["runs"]}
    assert workers == {"real": 2, "synthetic": 2, "workers=0": 0}  # the override reached the Trainer's loader
    assert_verdict(report, "compute", "cpu", "inconclusive")
    for rec in report["recommendations"]:
        assert "DataLoader(dataset" not in rec["detail"]  # the Trainer's loader is set in TrainingArguments


@needs_frameworks
def test_hugging_face_set_transform_augmentation_is_found_and_replaced(jpegs: Path) -> None:
    # Hugging Face's image-classification example: a module-level Compose applied by the function
    # given to Dataset.set_transform, images decoded by datasets, Trainer with 2 workers
    report = diagnose("hf_image_classification.py", str(jpegs), "--max-steps", "300", modes="real,synthetic,no-aug")
    check_runs(report, {"real", "synthetic", "no-aug"})
    replaced = {s["original"].split("(")[0]: s for s in report["substitutions"]}
    assert {"RandomResizedCrop", "RandomHorizontalFlip"} <= set(replaced), report["substitutions"]
    assert "_train_transforms" in replaced["RandomResizedCrop"]["location"]  # where the pipeline lives
    assert "CenterCrop" in replaced["RandomResizedCrop"]["replacement"]  # the same size, deterministic


@needs_frameworks
def test_hf_stream_mapped_on_the_fly_has_the_pipeline_its_map_uses_replaced(jpegs: Path) -> None:
    report = diagnose("hf_image_classification.py", str(jpegs), "--stream", "--max-steps", "300", modes="real,no-aug")
    check_runs(report, {"real", "no-aug"})
    replaced = {s["original"].split("(")[0]: s for s in report["substitutions"]}
    assert {"RandomResizedCrop", "RandomHorizontalFlip"} <= set(replaced), report["substitutions"]
    assert not any(s["undone"] for s in report["substitutions"])  # checked on the stream's first example


@needs_frameworks
def test_albumentations_random_transforms_are_replaced_by_deterministic_albumentations_ones(jpegs: Path) -> None:
    report = diagnose("albumentations_train.py", str(jpegs), "--epochs", "6", modes="real,synthetic,no-aug")
    check_runs(report, {"real", "synthetic", "no-aug"})
    replaced = {s["original"].split("(")[0]: s for s in report["substitutions"]}
    assert {"RandomResizedCrop", "HorizontalFlip", "ColorJitter", "OneOf", "Affine"} <= set(replaced), replaced
    crop = replaced["RandomResizedCrop"]["replacement"]
    assert crop == "Sequential([SmallestMaxSize(max_size=96), CenterCrop(96x96)])"
    assert not any(s["undone"] for s in report["substitutions"])  # every stand-in kept the sample's shape


@needs_frameworks
def test_timm_create_loader_on_images_of_varied_sizes(jpegs: Path) -> None:
    report = diagnose("timm_train.py", str(jpegs), "--epochs", "8")
    check_runs(report, {"real", "synthetic", "no-aug"})
    crop = next(s for s in report["substitutions"] if s["original"].startswith("RandomResizedCropAndInterpolation"))
    assert "CenterCrop" in crop["replacement"]  # a crop to the same size, never the identity
    assert not any(s["undone"] for s in report["substitutions"])


@needs_frameworks
def test_accelerate_prepare_keeps_every_mode() -> None:
    report = diagnose("accelerate_train.py", "--epochs", "3", modes="real,synthetic,workers=0")
    check_runs(report, {"real", "synthetic", "workers=0"})
    workers = {r["mode"]: r["num_workers"] for r in report["runs"]}
    assert workers["workers=0"] == 0  # through the DataLoaderShard accelerate rebuilt
    assert_verdict(report, "cpu")  # an FFT per sample on two workers


def test_imagenet_style_fake_data_with_contended_cores_is_not_called_io() -> None:
    report = diagnose("imagenet_style.py", "-j", "2")
    check_runs(report, {"real", "synthetic", "no-aug"})
    assert report["verdict"]["bottleneck"] != "io", evidence(report)  # nothing is read: no storage verdict
    ids = {r["id"] for r in report["recommendations"]}
    assert "faster-storage" not in ids

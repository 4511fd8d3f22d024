"""The training command as typed after --, mapped onto fastload's target and launcher."""

from __future__ import annotations

import pytest

from fastload_cli.cli.typed import Typed, given, understood
from fastload_cli.errors import UsageError


def typed(line: str) -> Typed | None:
    first, *rest = line.split()
    return understood(first, rest, "/nonexistent")


def test_a_script_is_a_script() -> None:
    assert typed("train.py --lr 0.1") is None
    assert typed("notebook.ipynb") is None
    assert typed("runs/train --lr 0.1") is None  # a path: the script check says what is wrong with it
    assert given("train.py", ["--lr", "0.1"], None) == Typed(target="train.py", args=("--lr", "0.1"))


def test_python_runs_a_script_or_a_module() -> None:
    assert typed("python train.py --lr 0.1") == Typed(target="train.py", args=("--lr", "0.1"), typed="python")
    assert typed("python3 -u -m pkg.train --epochs 1") == Typed(
        target="pkg.train", module=True, args=("--epochs", "1"), typed="python"
    )
    assert typed("/usr/bin/python3.12 train.py") == Typed(target="train.py", typed="python")


def test_torchrun_and_its_module_form_name_the_same_job() -> None:
    job = {"nproc_per_node": 2, "node_rank": None, "master_port": None, "max_restarts": None}
    expected = Typed(target="train.py", args=("--lr", "1"), launch=job, typed="torchrun")
    assert typed("torchrun --nproc-per-node 2 --standalone train.py --lr 1") == expected
    assert typed("torchrun --nproc_per_node=2 train.py --lr 1") == expected
    module = typed("python -m torch.distributed.run --nproc-per-node 2 train.py --lr 1")
    assert module is not None and module.launch == job and module.target == "train.py"
    two_nodes = typed(
        "torchrun --nnodes 2 --node-rank 1 --master-addr 10.0.0.1 --master-port 29500 --nproc-per-node 4 -m pkg.train"
    )
    assert two_nodes is not None and two_nodes.module and two_nodes.target == "pkg.train"
    assert two_nodes.launch == {
        "nnodes": "2",
        "node_rank": 1,
        "master_addr": "10.0.0.1",
        "master_port": 29500,
        "nproc_per_node": 4,
        "max_restarts": None,
    }


def test_accelerate_launch_counts_its_processes() -> None:
    one = typed("accelerate launch train.py --lr 1")
    assert one == Typed(target="train.py", args=("--lr", "1"), typed="accelerate launch")
    two = typed("accelerate launch --multi_gpu --num_processes 2 train.py")
    assert two is not None and two.launch == {
        "nproc_per_node": 2,
        "nnodes": "1",
        "node_rank": None,
        "master_port": None,
    }


def test_module_option_takes_the_arguments_after_the_separator() -> None:
    # `fastload diagnose -m pkg.train -- --lr 1`: the first argument after -- lands where the script would
    assert given("--lr", ["1"], "pkg.train") == Typed(target="pkg.train", module=True, args=("--lr", "1"))


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("deepspeed train.py", "'deepspeed' is neither a script nor a launcher"),
        ("torchrun --log-dir /tmp train.py", "--log-dir: not an option fastload passes on"),
        ("torchrun --nproc-per-node gpu train.py", "not a whole number"),
        ("accelerate config", "accelerate config"),
        ("accelerate launch --mixed_precision bf16 train.py", "--mixed_precision"),
        ("python -c print(1)", "python -c"),
        ("torchrun --nproc-per-node 2", "no training script"),
    ],
)
def test_what_cannot_be_passed_on_is_refused_with_the_forms_to_use(line: str, says: str) -> None:
    with pytest.raises(UsageError, match=says.replace("(", r"\(").replace(")", r"\)")) as refused:
        typed(line)
    assert refused.value.hint is not None and "fastload diagnose" in refused.value.hint

"""The main job runs end to end (one epoch) and the CLI explains its flags."""

import json

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the demo needs the 'demo' extra (scikit-learn)")

from tapegrad import cli, demo  # noqa: E402


def test_demo_one_epoch_end_to_end(tmp_path, capsys):
    summary = demo.run(epochs=1, seed=0, out_dir=str(tmp_path), progress=False)
    out = capsys.readouterr().out
    assert "held-out accuracy" in out and "reloaded" in out
    assert summary["test_accuracy"] > 0.5  # one epoch already learns a lot
    for name in (
        "digits_cnn.tapegrad",
        "training_curves.png",
        "train_step_graph.dot",
        "summary.json",
    ):
        assert (tmp_path / name).stat().st_size > 0, name
    assert (tmp_path / "train_step_graph.dot").read_text().lstrip().startswith("digraph")
    assert (tmp_path / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "summary.json").read_text())["epochs"] == 1


def test_cli_help_explains_flags(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["demo", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--epochs", "--seed", "--out"):
        assert flag in text


def test_data_split_is_stratified_and_disjoint():
    (xtr, ytr), (xte, yte) = demo.load_digits_split(seed=0)
    assert xtr.shape[1:] == (1, 8, 8) and xtr.dtype.name == "float32"
    assert len(xtr) + len(xte) == 1797
    assert set(yte.tolist()) == set(range(10))


def test_digits_read_from_the_csv_equal_load_digits_and_so_does_the_fallback(monkeypatch):
    # Note [Digits without importing sklearn]: the shipped CSV read directly, and the
    # fallback when the file is not found, both give load_digits()'s arrays exactly.
    datasets = pytest.importorskip("sklearn.datasets")
    ref = datasets.load_digits()
    images, labels = demo._load_digits()
    np.testing.assert_array_equal(images, ref.images)
    np.testing.assert_array_equal(labels, ref.target)
    monkeypatch.setattr(demo.importlib.util, "find_spec", lambda name: None)
    images, labels = demo._load_digits()
    np.testing.assert_array_equal(images, ref.images)
    np.testing.assert_array_equal(labels, ref.target)

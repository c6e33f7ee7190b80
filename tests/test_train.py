"""End to end: the demo models learn, and a resumed run is bit-identical to an uninterrupted one."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import data, optim
from funcgrad.models import RECIPES, GPT, sequence_loss
from funcgrad.train import classification_loss, fit

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_mlp_reaches_95_percent_on_digits():
    x, y = data.load("digits", "train")
    xt, yt = data.load("digits", "test")
    model = RECIPES["mlp"].build(x, y, fg.random.key(0))
    loader = data.DataLoader(data.ArrayDataset(x, y), batch_size=64, shuffle=True, seed=0)
    result = fit(model, optim.adamw(optim.cosine_schedule(3e-3, 10 * len(loader))), loader, classification_loss,
                 epochs=10, eval_loader=data.DataLoader(data.ArrayDataset(xt, yt), batch_size=512))
    assert result.history[-1]["test_accuracy"] >= 0.95, result.history[-1]


def test_tiny_transformer_loss_falls():
    x, y = data.load("sort", "train", n=512, length=4)
    model = GPT(data.SEQUENCE_VOCAB, x.shape[1], dim=32, depth=1, heads=2, key=fg.random.key(0))
    loader = data.DataLoader(data.ArrayDataset(x, y), batch_size=32, shuffle=True, seed=0)
    first = float(sequence_loss(model, (x[:256], y[:256]))[0])
    result = fit(model, optim.adamw(3e-3), loader, sequence_loss, epochs=4)
    last = float(sequence_loss(result.model, (x[:256], y[:256]))[0])
    assert last < 0.6 * first, (first, last)


SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import funcgrad as fg
    from funcgrad import data, optim, nn
    from funcgrad.train import classification_loss, fit

    steps, ckpt_dir, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    x, y = data.load("digits", "train")
    model = nn.MLP(64, [32], 10, dropout=0.2, key=fg.random.key(1))
    loader = data.DataLoader(data.ArrayDataset(x[:300], y[:300]), batch_size=32, shuffle=True, seed=2)
    opt = optim.adamw(optim.cosine_schedule(1e-2, 40))
    result = fit(model, opt, loader, classification_loss, epochs=10, key=fg.random.key(3), max_steps=steps,
                 checkpoint_dir=ckpt_dir, resume=True)
    np.savez(out, *[np.asarray(p) for p in fg.tree_leaves((result.model, result.opt_state))])
""")


def _run(tmp_path, steps, ckpt_dir, out):
    script = tmp_path / "train_script.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, str(script), str(steps), str(ckpt_dir), str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with np.load(out) as f:
        return [f[k] for k in sorted(f.files, key=lambda k: int(k.split("_")[1]))]


def test_resume_is_bit_exact_across_processes(tmp_path):
    straight = _run(tmp_path, 23, tmp_path / "a", tmp_path / "a.npz")  # 23 steps: ends mid-epoch
    _run(tmp_path, 13, tmp_path / "b", tmp_path / "b1.npz")              # 13 steps, checkpoint, exit
    resumed = _run(tmp_path, 23, tmp_path / "b", tmp_path / "b2.npz")    # fresh process: 10 more
    assert len(straight) == len(resumed)
    for a, b in zip(straight, resumed):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_fit_reads_losses_back_every_n_steps_with_the_same_results():
    """read_every=4: the device's values are read (and on_step called) after every 4th step and at
    the end of an epoch or run, in step order; the epoch's averages are bit-identical to reading
    every step."""
    x, y = data.load("digits", "train")
    runs = {}
    for every in (1, 4):
        ran, seen = [0], []

        def counting_loss(model, batch, key=None):
            ran[0] += 1
            return classification_loss(model, batch, key)
        model = fg.nn.MLP(64, [16], 10, key=fg.random.key(0))
        loader = data.DataLoader(data.ArrayDataset(x[:320], y[:320]), batch_size=32)  # 10 steps an epoch
        result = fit(model, optim.sgd(0.1), loader, counting_loss, epochs=2, max_steps=15, jit=False,
                     read_every=every, on_step=lambda info: seen.append((info.step, ran[0], info.loss)))
        runs[every] = result.history, seen
    assert [s for s, _, _ in runs[4][1]] == list(range(1, 16))
    assert [r for _, r, _ in runs[4][1]] == [4] * 4 + [8] * 4 + [10] * 2 + [14] * 4 + [15]
    assert [r for _, r, _ in runs[1][1]] == list(range(1, 16))
    assert [loss for _, _, loss in runs[4][1]] == [loss for _, _, loss in runs[1][1]]
    assert runs[4][0] == [dict(h, seconds=runs[4][0][i]["seconds"]) for i, h in enumerate(runs[1][0])]
    with pytest.raises(ValueError, match="read_every"):
        fit(model, optim.sgd(0.1), loader, classification_loss, read_every=0)

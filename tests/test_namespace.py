"""The torch namespace around the ops (issue 12): device, Size, cuda/backends/accelerator
flags, settings, dtypes, module paths, placeholders that raise clear errors, Tensor.data."""

import importlib

import numpy as np
import pytest

import tapegrad as tg


def test_device_parses_like_torch(torch_mod):
    for args in [("cpu",), ("cuda",), ("cuda:1",), ("cuda", 0), ("mps",), ("meta",)]:
        ours, theirs = tg.device(*args), torch_mod.device(*args)
        assert (ours.type, ours.index, str(ours), repr(ours)) == (
            theirs.type,
            theirs.index,
            str(theirs),
            repr(theirs),
        )
    assert tg.device(tg.device("cpu")) == tg.device("cpu")
    assert tg.device(3) == "cuda:3"  # a bare int is a CUDA ordinal (torch checks for a GPU)
    for bad in ["foo", "cpu:x"]:
        with pytest.raises(RuntimeError):
            torch_mod.device(bad)
        with pytest.raises(RuntimeError, match="device"):
            tg.device(bad)
    with pytest.raises(TypeError, match="device"):
        tg.device(1.5)


def test_device_objects_work_wherever_a_device_name_does():
    cpu = tg.device("cpu")
    x = tg.zeros(2, device=cpu)
    assert x.device == cpu and x.device.type == "cpu" and isinstance(x.device, tg.device)
    assert x.to(cpu) is x and tg.randn(3, device=cpu).device == "cpu"
    assert x.to(cpu, non_blocking=True) is x
    assert x.to(tg.ones(1, dtype=tg.float64)).dtype == tg.float64  # to(other)
    for like in (tg.zeros_like, tg.ones_like, tg.empty_like, tg.rand_like, tg.randn_like):
        assert like(x, device=cpu).device == cpu
    assert tg.full_like(x, 2.0, device=cpu).tolist() == [2.0, 2.0]
    m = tg.nn.Linear(2, 2).to(cpu, non_blocking=True)
    assert m.weight.device.type == "cpu"
    with pytest.raises(RuntimeError, match="CuPy"):
        tg.ones(2, device=tg.device("cuda"))


def test_size(torch_mod):
    s, t = tg.Size([2, 3, 4]), torch_mod.Size([2, 3, 4])
    assert s == t == (2, 3, 4) and s.numel() == t.numel() == 24
    assert isinstance(s[1:], tg.Size) and s[1:] == (3, 4) and s[0] == 2
    assert repr(s) == "tapegrad.Size([2, 3, 4])"
    assert tg.ones(2, 3).shape == tg.Size([2, 3])
    with pytest.raises(TypeError, match="ints"):
        tg.Size([2.5])


def test_cuda_accelerator_and_backends_flags(torch_mod):
    assert tg.cuda.is_available() is torch_mod.cuda.is_available() is False
    assert tg.cuda.device_count() == 0
    tg.cuda.manual_seed(1), tg.cuda.manual_seed_all(1), tg.cuda.empty_cache()
    for fn in (tg.cuda.current_device, tg.cuda.synchronize):  # as torch's CPU build
        with pytest.raises(RuntimeError, match="is_available"):
            fn()
    assert tg.accelerator.is_available() is False and tg.accelerator.current_accelerator() is None
    import tapegrad.backends.cudnn as cudnn

    assert cudnn.enabled and not cudnn.is_available()
    tg.backends.cudnn.benchmark = True
    tg.backends.cuda.matmul.allow_tf32 = True
    assert tg.backends.mps.is_available() is False and tg.backends.mps.is_built() is False


def test_threads_and_settings():
    before = tg.get_num_threads()
    tg.set_num_threads(1)
    assert tg.get_num_threads() == 1
    tg.set_num_threads(before)
    with pytest.raises(RuntimeError, match="positive"):
        tg.set_num_threads(0)
    model = tg.nn.Linear(2, 2)
    assert tg.compile(model) is model and tg.compile()(model) is model
    assert tg.is_tensor(tg.ones(1)) and not tg.is_tensor(np.ones(1))
    tg.use_deterministic_algorithms(True)
    assert tg.are_deterministic_algorithms_enabled()
    tg.use_deterministic_algorithms(False)


def test_default_dtype_and_aliases(torch_mod):
    assert tg.get_default_dtype() == tg.float32
    tg.set_default_dtype(tg.float64)
    try:
        assert tg.tensor([1.5]).dtype == tg.float64
    finally:
        tg.set_default_dtype(tg.float32)
    for name in ["half", "short", "int", "long", "float", "double", "bfloat16", "uint8"]:
        assert str(getattr(tg, name)) == str(getattr(torch_mod, name)).replace("torch.", "")


def test_bfloat16_storage_casts_and_arithmetic(torch_mod):
    x = tg.tensor([1.5, -2.25, 3.0]).to(tg.bfloat16)
    assert x.dtype == tg.bfloat16 and x.is_floating_point()
    y = (x * 2 + 1).float()
    ref = (torch_mod.tensor([1.5, -2.25, 3.0]).to(torch_mod.bfloat16) * 2 + 1).float()
    np.testing.assert_array_equal(y.numpy(), ref.numpy())
    w = tg.tensor([0.5, 1.0]).to(tg.bfloat16).requires_grad_()
    (w * w).sum().backward()
    assert w.grad.dtype == tg.bfloat16
    np.testing.assert_array_equal(w.grad.float().numpy(), [1.0, 2.0])


def test_tensor_format(torch_mod):
    for value in [0.123456, -3.0, 12345.678]:
        ours, theirs = tg.tensor(value), torch_mod.tensor(value)
        for spec in [".4f", ">10.2e", "", ".1%"]:
            assert format(ours, spec) == format(theirs, spec)
    assert f"{tg.tensor(7)}" == f"{torch_mod.tensor(7)}" == "7"
    assert f"{tg.ones(2)}" == str(tg.ones(2))
    with pytest.raises(TypeError, match="unsupported format string"):
        format(tg.ones(2), ".3f")


def test_tensor_type_and_equal(torch_mod):
    for dtype in ["float32", "float64", "int64", "bool", "uint8", "int32"]:
        ours = tg.zeros(1, dtype=getattr(tg, dtype) if dtype != "bool" else tg.bool)
        theirs = torch_mod.zeros(1, dtype=getattr(torch_mod, dtype))
        assert ours.type() == theirs.type()
    assert tg.ones(2).type(tg.int64).dtype == tg.int64
    assert tg.ones(2).type("torch.DoubleTensor").dtype == tg.float64
    assert tg.equal(tg.ones(2), tg.ones(2, dtype=tg.float64))
    assert not tg.equal(tg.ones(2), tg.ones(3)) and not tg.ones(2).equal(tg.zeros(2))
    with pytest.raises(TypeError, match="must be Tensor"):
        tg.equal(tg.ones(2), 1)


def test_data_is_a_detached_tensor_sharing_memory(torch_mod):
    """p.data.add_(g) and p.data.copy_(x) update the parameter, record nothing."""
    p = tg.nn.Parameter(tg.ones(3))
    tp = torch_mod.nn.Parameter(torch_mod.ones(3))
    for q, m in ((p, tg), (tp, torch_mod)):
        (q * q).sum().backward()
        q.data.add_(q.grad, alpha=-0.25)
        d = q.data
        assert isinstance(d, m.Tensor) and not d.requires_grad and d.grad_fn is None
    np.testing.assert_array_equal(p.detach().numpy(), tp.detach().numpy())
    p.data.copy_(tg.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0, 3.0])
    y = p * 2
    p.data.mul_(10)  # not recorded: no version bump, backward still runs
    y.sum().backward()
    assert p.grad.numpy().tolist() == [4.0, 4.0, 4.0]  # 2 from the first backward + 2
    assert p.data.numpy().tolist() == [10.0, 20.0, 30.0]


MODULE_PATHS = [
    "torch.nn.modules",
    "torch.nn.modules.linear",
    "torch.nn.modules.conv",
    "torch.nn.modules.batchnorm",
    "torch.nn.modules.loss",
    "torch.nn.modules.module",
    "torch.nn.parameter",
    "torch.nn.init",
    "torch.nn.parallel",
    "torch.nn.functional",
    "torch.optim.lr_scheduler",
    "torch.utils.checkpoint",
    "torch.utils.data",
    "torch.utils.data.dataloader",
    "torch.utils.data.sampler",
    "torch.utils.data.dataset",
    "torch.utils.data.distributed",
    "torch.utils.tensorboard",
    "torch.testing",
    "torch.random",
    "torch.distributed",
    "torch.onnx",
    "torch.backends.cudnn",
    "torch.cuda",
    "torch.jit",
]


@pytest.mark.parametrize("path", MODULE_PATHS)
def test_module_paths_programs_import(path):
    mod = importlib.import_module("tapegrad" + path[len("torch") :])
    assert mod is not None


def test_module_path_classes_are_the_layers():
    from tapegrad.nn.modules.batchnorm import BatchNorm2d
    from tapegrad.nn.modules.linear import Linear

    from tapegrad.nn.parameter import Parameter

    assert Linear is tg.nn.Linear and BatchNorm2d is tg.nn.BatchNorm2d
    assert Parameter is tg.nn.Parameter and tg.nn.modules.Conv2d is tg.nn.Conv2d


def test_variable_as_in_old_tutorials(torch_mod):
    from tapegrad.autograd import Variable

    x = tg.ones(2)
    v = Variable(x, requires_grad=True)
    tv = torch_mod.autograd.Variable(torch_mod.ones(2), requires_grad=True)
    assert v.requires_grad == tv.requires_grad and not x.requires_grad
    assert isinstance(x, Variable) and isinstance(v, tg.Tensor)
    v.data.add_(1)
    assert x.numpy().tolist() == [2.0, 2.0]  # shares memory
    with pytest.raises(TypeError, match="tensor"):
        Variable([1.0])


def test_features_that_cannot_exist_raise_clear_errors_when_used():
    import tapegrad.utils.tensorboard as tb

    with pytest.raises(RuntimeError, match="tensorboard"):
        tb.SummaryWriter("runs")
    with pytest.raises(RuntimeError, match="ONNX"):
        tg.onnx.export(tg.nn.Linear(2, 2), tg.ones(1, 2), "m.onnx")
    with pytest.raises(RuntimeError, match="TorchScript archives"):
        tg.jit.save(tg.nn.Linear(2, 2), "m.pt")
    with pytest.raises(RuntimeError, match="TorchScript archives"):
        tg.jit.load("m.pt")


def test_distributed_before_init_process_group():
    import tapegrad.distributed as dist

    try:
        import mpi4py  # noqa: F401
    except ImportError:
        has_mpi = False
    else:
        has_mpi = True
    assert dist.is_available() is has_mpi and dist.is_initialized() is False
    for name in ["get_rank", "get_world_size", "barrier"]:
        with pytest.raises(RuntimeError, match="init_process_group"):
            getattr(dist, name)()
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_reduce(tg.ones(2))


def test_data_parallel_runs_the_module_and_ddp_needs_a_process_group():
    model = tg.nn.Linear(3, 2)
    dp = tg.nn.DataParallel(model)
    x = tg.randn(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), model(x).detach().numpy())
    assert sorted(dp.state_dict()) == ["module.bias", "module.weight"]
    assert list(dp.parameters())[0] is model.weight
    with pytest.raises(RuntimeError, match="init_process_group"):
        tg.nn.parallel.DistributedDataParallel(model)


def test_assert_close_matches_torch(torch_mod):
    from tapegrad.testing import assert_close

    cases = [
        (lambda m: m.tensor([1.0, 2.0, 3.0]), lambda m: m.tensor([1.0, 2.5, 3.0]), "not close"),
        (lambda m: m.ones(2), lambda m: m.ones(3), "shape"),
        (lambda m: m.ones(2), lambda m: m.ones(2, dtype=m.float64), "dtype"),
        (lambda m: m.tensor([1, 2]), lambda m: m.tensor([1, 3]), "not equal"),
        (lambda m: [m.ones(1)], lambda m: [m.ones(1), m.ones(1)], "length"),
        (lambda m: {"a": m.ones(1)}, lambda m: {"a": m.zeros(1)}, r"item \['a'\]"),
        (lambda m: 1.0, lambda m: 1.1, "Scalars are not close"),
    ]
    for make_a, make_b, pattern in cases:
        with pytest.raises(AssertionError, match=pattern):
            torch_mod.testing.assert_close(make_a(torch_mod), make_b(torch_mod))
        with pytest.raises(AssertionError, match=pattern):
            assert_close(make_a(tg), make_b(tg))
    assert_close(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0 + 1e-6]))
    assert_close({"w": [tg.ones(2)]}, {"w": [tg.ones(2)]})
    assert_close(tg.tensor([1.0]), tg.tensor([1.1]), rtol=0.2, atol=0.0)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        assert_close(tg.ones(1), tg.ones(1), rtol=1)
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close(tg.ones(1), 1.0)


def test_tensor_creation_and_memory_methods_match_torch(torch_mod):
    def facts(m):
        x = m.ones(2, 3, dtype=m.float64)
        i = m.ones(2, dtype=m.int64)
        return [
            x.new_zeros(2).dtype,
            x.new_zeros(2, 3).shape,
            x.new_ones((4,)).shape,
            x.new_full((2,), 3).dtype,
            x.new_empty(1).dtype,
            x.new_tensor([1, 2]).dtype,
            i.new_tensor([1.5]).tolist(),
            i.new_zeros(2, dtype=m.float32).dtype,
            x.new_ones(2, requires_grad=True).requires_grad,
            x.stride(),
            x.stride(-1),
            x.mT.stride(),
            x.element_size(),
            x.nelement(),
            x.is_cuda,
            x.get_device(),
            x.is_pinned(),
            i.type_as(x).dtype,
            m.numel(x),
            m.is_floating_point(x),
            m.is_floating_point(i),
        ]

    def norm(v):
        return tuple(v) if isinstance(v, tuple) else str(v).replace("torch.", "")

    assert [norm(v) for v in facts(tg)] == [norm(v) for v in facts(torch_mod)]
    x = tg.ones(2)
    assert x.pin_memory() is x and x.share_memory_() is x
    with pytest.raises(IndexError, match="stride"):
        x.stride(3)


def test_set_printoptions():
    x = tg.tensor([1.123456, 2.0])
    default = repr(x)
    try:
        tg.set_printoptions(precision=2)
        assert repr(x) == "tensor([1.12, 2.00])"  # torch 2.13 prints this
        tg.set_printoptions(precision=6, sci_mode=False)
        assert repr(x) == "tensor([1.123456, 2.000000])"
        tg.set_printoptions(threshold=5, edgeitems=2)
        assert "..." in repr(tg.arange(10)) and repr(tg.arange(10)).startswith("tensor([0, 1,")
        tg.set_printoptions(sci_mode=True, precision=1)
        assert repr(x) == "tensor([1.1e+00, 2.0e+00])"
        tg.set_printoptions(profile="full")
        assert "..." not in repr(tg.arange(2000))
    finally:
        tg.set_printoptions(profile="default")
    assert repr(x) == default
    with pytest.raises(ValueError, match="profile"):
        tg.set_printoptions(profile="tiny")

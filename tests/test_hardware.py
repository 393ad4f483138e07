"""xlt.hardware: native bf16 read from the CPU's flags, and what each inference precision resolves to."""

from __future__ import annotations

import pytest
import torch

from xlt import hardware


def test_native_bf16_is_read_from_the_flags():
    assert hardware.native_bf16({"avx512f", "avx512_bf16"}) and hardware.native_bf16({"amx_bf16", "sse2"})
    assert not hardware.native_bf16({"avx2", "avx512f", "fma"}) and not hardware.native_bf16(set())
    assert hardware.native_bf16() == bool(hardware.cpu_flags() & {"avx512_bf16", "amx_bf16"})  # this machine's


@pytest.mark.parametrize("native, cpu", [(True, "bf16"), (False, "fp32")])
def test_auto_is_bf16_only_on_a_cpu_that_has_it(monkeypatch, native, cpu):
    monkeypatch.setattr(hardware, "native_bf16", lambda flags=None: native)
    assert hardware.resolve_precision("auto") == cpu and hardware.resolve_precision("auto", "cuda") == "fp32"
    assert hardware.resolve_precision("fp32") == "fp32" and hardware.resolve_precision("bf16", "cuda") == "bf16"
    with pytest.raises(ValueError, match="precision must be one of auto, fp32, bf16, fp16, got 'int8'"):
        hardware.resolve_precision("int8")


def test_auto_resolves_the_same_under_load_and_times_nothing(monkeypatch):
    """Two threads multiplying matrices beside it (the 2-core machine busy) change nothing: auto is
    read from the CPU's flags, not timed (a timing under load once chose the demo's precision)."""
    import threading
    import time

    expected = "bf16" if hardware.native_bf16() else "fp32"
    stop = threading.Event()

    def busy() -> None:
        a = torch.randn(256, 256)
        while not stop.is_set():
            a @ a

    workers = [threading.Thread(target=busy) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        monkeypatch.setattr(time, "perf_counter", lambda: pytest.fail("auto timed something"))
        assert {hardware.resolve_precision("auto") for _ in range(50)} == {expected}
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def test_autocast_runs_matrix_products_in_bf16_or_fp16_or_leaves_them_alone():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with hardware.autocast("bf16"):
        assert (a @ b).dtype == torch.bfloat16
    with hardware.autocast("fp16"):
        assert (a @ b).dtype == torch.float16
    with hardware.autocast("fp32"):
        assert (a @ b).dtype == torch.float32


def test_the_cpu_model_is_the_name_proc_cpuinfo_gives(tmp_path, monkeypatch):
    from xlt import hardware

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n")
    real_path = hardware.Path
    monkeypatch.setattr(hardware, "Path", lambda p: real_path(cpuinfo) if p == "/proc/cpuinfo" else real_path(p))
    assert hardware.cpu_model() == "Intel(R) Xeon(R) Processor"
    cpuinfo.unlink()  # no /proc (macOS): what the platform module reports
    assert hardware.cpu_model() == (hardware.platform.processor() or "unknown")


@pytest.mark.parametrize("flags, can", [({"avx2", "fma"}, ("fp32",)), ({"avx512f", "avx512_bf16"}, ("fp32", "bf16")),
                                        ({"amx_bf16", "amx_fp16"}, ("fp32", "bf16", "fp16")),
                                        ({"avx512_fp16"}, ("fp32", "fp16"))])
def test_a_cpu_computes_in_what_it_multiplies_natively(monkeypatch, flags, can):
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset(flags))
    assert hardware.precisions("cpu") == can
    for precision in ("auto", *can):
        hardware.check_precision(precision, "cpu", "optim.precision")


def test_an_impossible_precision_is_one_line_naming_the_device_and_what_it_can_do(monkeypatch):
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    monkeypatch.setattr(hardware, "cpu_model", lambda: "AMD EPYC 7B13")
    with pytest.raises(ValueError) as refused:
        hardware.check_precision("bf16", "cpu", "lm.optim.precision")
    assert str(refused.value) == ("lm.optim.precision: bf16 is not something this CPU (AMD EPYC 7B13) computes in; "
                                  "it can do fp32 (or auto)")
    with pytest.raises(ValueError, match="lm.optim.precision must be one of auto, fp32, bf16, fp16, got 'fp8'"):
        hardware.check_precision("fp8", "cpu", "lm.optim.precision")


@pytest.mark.parametrize("capability, can", [((7, 5), ("fp32", "fp16")), ((8, 6), ("fp32", "fp16", "bf16"))])
def test_a_gpu_computes_in_bf16_from_ampere_on(monkeypatch, capability, can):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
    assert hardware.precisions("cuda") == can
    if "bf16" not in can:
        with pytest.raises(ValueError, match=r"bf16 is not something this GPU \(Tesla T4\) computes in; it can do fp32, fp16"):
            hardware.check_precision("bf16", "cuda", "optim.precision")

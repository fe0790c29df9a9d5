"""Limits from the environment: defaults, overrides, and a clear error for a bad value."""

import pytest

import settings


def test_defaults_and_overrides(monkeypatch):
    for name in ("SAM2_MAX_IMAGE_PIXELS", "SAM2_MAX_FRAMES", "SAM2_FRAME_TIMEOUT_S", "SAM2_EMBEDDING_CACHE_MB"):
        monkeypatch.delenv(name, raising=False)
    assert settings.max_image_pixels() == 4096 * 4096 and settings.max_frames() == 600
    assert settings.frame_timeout_s() == 90.0 and settings.embedding_cache_bytes() == 512 * 2**20
    monkeypatch.setenv("SAM2_MAX_FRAMES", "1200")
    monkeypatch.setenv("SAM2_FRAME_TIMEOUT_S", "0.5")
    monkeypatch.setenv("SAM2_EMBEDDING_CACHE_MB", "0")
    assert settings.max_frames() == 1200 and settings.frame_timeout_s() == 0.5
    assert settings.embedding_cache_bytes() == 0


def test_admission_defaults_and_warm_start(monkeypatch):
    for name in ("SAM2_POOL_WIDTH", "SAM2_QUEUE_DEPTH", "SAM2_RETRY_AFTER_S", "SAM2_WARM_START", "SPACES_ZERO_GPU"):
        monkeypatch.delenv(name, raising=False)
    assert (settings.pool_width(), settings.queue_depth(), settings.retry_after_s()) == (2, 16, 5)
    assert settings.warm_start()
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert not settings.warm_start()  # no GPU outside @spaces.GPU calls on ZeroGPU
    monkeypatch.setenv("SAM2_WARM_START", "1")
    assert settings.warm_start()
    monkeypatch.setenv("SAM2_QUEUE_DEPTH", "0")
    assert settings.queue_depth() == 0


@pytest.mark.parametrize("name, value, fragment", [
    ("SAM2_MAX_FRAMES", "lots", "not a number"), ("SAM2_MAX_FRAMES", "0", ">= 1"),
    ("SAM2_MAX_IMAGE_PIXELS", "2.5", "whole number"), ("SAM2_FRAME_TIMEOUT_S", "0", "> 0"),
    ("SAM2_EMBEDDING_CACHE_MB", "-1", ">= 0"), ("SAM2_POOL_WIDTH", "0", ">= 1"),
    ("SAM2_QUEUE_DEPTH", "1.5", "whole number"), ("SAM2_WARM_START", "yes", "0 or 1"),
])
def test_bad_values_name_the_variable(name, value, fragment, monkeypatch):
    monkeypatch.setenv(name, value)
    getter = {"SAM2_MAX_FRAMES": settings.max_frames, "SAM2_MAX_IMAGE_PIXELS": settings.max_image_pixels,
              "SAM2_FRAME_TIMEOUT_S": settings.frame_timeout_s,
              "SAM2_EMBEDDING_CACHE_MB": settings.embedding_cache_bytes, "SAM2_POOL_WIDTH": settings.pool_width,
              "SAM2_QUEUE_DEPTH": settings.queue_depth, "SAM2_WARM_START": settings.warm_start}[name]
    with pytest.raises(ValueError, match=f"{name}=.*{fragment}"):
        getter()

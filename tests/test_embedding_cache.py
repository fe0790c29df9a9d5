"""The image-embedding cache: the encoder runs once per image, results are unchanged, keys
follow content and model, the LRU is bounded by bytes, and concurrent use is safe."""

import threading
import time

import numpy as np
import pytest
import torch
from PIL import Image

import mask_generation
import samv2_handler
from embedding_cache import EmbeddingCache, embedding_key, pixels_digest
from prompts import parse_image_prompt


@pytest.fixture
def encoder_calls(models):
    calls = []
    hook = models.image_model.vision_encoder.register_forward_pre_hook(lambda *_: calls.append(1))
    samv2_handler.embedding_cache.clear()
    yield calls
    hook.remove()
    samv2_handler.embedding_cache.clear()


def image(seed=0, width=320, height=240):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (height, width, 3), dtype=np.uint8))


def test_second_prompt_reuses_the_embedding(models, encoder_calls, monkeypatch):
    picture = image()
    first = parse_image_prompt([{"x0": 10, "y0": 20, "x1": 200, "y1": 150}], None, None, 320, 240)
    second = parse_image_prompt(None, [{"x": 100, "y": 100}, {"x": 20, "y": 30}], [1, 0], 320, 240)
    samv2_handler.segment_image(models, picture, first)
    assert len(encoder_calls) == 1
    cached = samv2_handler.segment_image(models, picture, second)
    assert len(encoder_calls) == 1  # no encoder run for the second prompt
    monkeypatch.setattr(samv2_handler, "embedding_cache", EmbeddingCache(0))  # a cache that keeps nothing
    uncached = samv2_handler.segment_image(models, picture, second)
    assert len(encoder_calls) == 2
    np.testing.assert_array_equal(cached, uncached)


def test_an_edited_image_misses(models, encoder_calls):
    picture = image()
    prompt = parse_image_prompt([{"x0": 10, "y0": 20, "x1": 200, "y1": 150}], None, None, 320, 240)
    samv2_handler.segment_image(models, picture, prompt)
    edited = picture.copy()
    edited.putpixel((5, 5), (0, 0, 0) if picture.getpixel((5, 5)) != (0, 0, 0) else (1, 1, 1))
    samv2_handler.segment_image(models, edited, prompt)
    samv2_handler.segment_image(models, picture, prompt)
    assert len(encoder_calls) == 2


def test_generate_masks_reuses_crop_embeddings(models, encoder_calls):
    params = mask_generation.EverythingParams(points_per_side=2, pred_iou_thresh=0, stability_score_thresh=0,
                                              crop_n_layers=1)
    first = mask_generation.generate_masks(models, image(1), params)
    assert len(encoder_calls) == 5  # the whole image and 4 crops
    again = mask_generation.generate_masks(models, image(1), params)
    assert len(encoder_calls) == 5 and again == first


def test_keys_follow_model_and_content():
    pixels = pixels_digest(image())
    base = embedding_key("src", "rev", "tiny", torch.device("cpu"), pixels)
    assert base == embedding_key("src", "rev", "tiny", torch.device("cpu"), pixels_digest(image()))
    for other in (embedding_key("src2", "rev", "tiny", torch.device("cpu"), pixels),
                  embedding_key("src", "rev2", "tiny", torch.device("cpu"), pixels),
                  embedding_key("src", "rev", "large", torch.device("cpu"), pixels),
                  embedding_key("src", "rev", "tiny", torch.device("meta"), pixels),
                  embedding_key("src", "rev", "tiny", torch.device("cpu"), pixels_digest(image(1))),
                  embedding_key("src", "rev", "tiny", torch.device("cpu"), pixels, crop_box=[0, 0, 10, 10])):
        assert other != base
    same_pixels_other_size = Image.frombytes("RGB", (240, 320), image().tobytes())
    assert pixels_digest(same_pixels_other_size) != pixels


def test_lru_is_bounded_by_bytes():
    entry = [torch.zeros(256)]  # 1 KiB
    cache = EmbeddingCache(budget_bytes=2048)
    for key in "abc":
        cache.get_or_compute(key, lambda: entry)
    assert len(cache) == 2 and cache.used_bytes == 2048
    assert cache.get_or_compute("b", lambda: pytest.fail("b was evicted"))[1] is True
    cache.get_or_compute("d", lambda: entry)  # evicts "c", the least recently used
    assert cache.get_or_compute("b", lambda: pytest.fail("b was evicted"))[1] is True
    _, hit = cache.get_or_compute("c", lambda: entry)
    assert hit is False
    huge = [torch.zeros(10_000)]
    value, hit = cache.get_or_compute("huge", lambda: huge)
    assert value is huge and not hit and "huge" not in cache._items  # served, not kept


def test_concurrent_misses_compute_once_and_hits_do_not_wait():
    cache = EmbeddingCache(budget_bytes=2**20)
    computed = []
    slow_started = threading.Event()

    def slow():
        computed.append("slow")
        slow_started.set()
        time.sleep(0.3)
        return [torch.ones(4)]

    cache.get_or_compute("ready", lambda: [torch.zeros(4)])
    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_compute("same", slow)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    slow_started.wait(5)
    started = time.perf_counter()
    value, hit = cache.get_or_compute("ready", lambda: pytest.fail("ready was computed twice"))
    assert hit and time.perf_counter() - started < 0.1  # a hit on another key never waits
    for thread in threads:
        thread.join()
    assert computed == ["slow"]
    assert sum(not hit for _, hit in results) == 1 and all(torch.equal(v[0], torch.ones(4)) for v, _ in results)
    assert cache.misses == 2 and cache.hits == 8


def test_a_failing_computation_is_not_cached():
    cache = EmbeddingCache(budget_bytes=2**20)
    with pytest.raises(RuntimeError):
        cache.get_or_compute("k", lambda: (_ for _ in ()).throw(RuntimeError("encoder failed")))
    value, hit = cache.get_or_compute("k", lambda: [torch.ones(1)])
    assert not hit and len(cache) == 1

"""Image-embedding cache: encode an image once, decode many prompts against it.

SAM 2's image encoder is the heavy half of a prompt; the mask decoder is light. Clicks on the
same image (a person refining a mask, an agent looping over objects) and segment-everything
crops reuse the encoder's output from here.

Keys hash the content, never a caller-supplied id: model source, revision and variant, the
device, the decoded pixels with their mode and size, and the crop box. An edited image therefore
never gets a stale embedding, and a new checkpoint never reuses old ones. Entries stay on the
model's device; the cache is an LRU bounded by bytes. Concurrent misses for one key compute it
once (the others wait for that result), and hits never wait for an unrelated computation.
"""

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

import torch
from PIL import Image


def pixels_digest(image: Image.Image) -> str:
    """sha256 of the decoded pixels with their mode and size (hash once per request)."""
    digest = hashlib.sha256(f"{image.mode}:{image.width}x{image.height}:".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


def embedding_key(source: str, revision: str, variant: str, device: torch.device, pixels: str,
                  crop_box=None) -> str:
    parts = (source, revision, variant, str(device), pixels,
             repr(None if crop_box is None else [int(v) for v in crop_box]))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _nbytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    return sum(_nbytes(item) for item in value)


class EmbeddingCache:
    def __init__(self, budget_bytes: int):
        self.budget_bytes = budget_bytes
        self._items: OrderedDict[str, object] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._used = 0
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: str, compute: Callable[[], object]) -> tuple[object, bool]:
        """(value, hit). On a miss `compute()` runs once per key, outside the cache's own lock."""
        with self._lock:
            if key in self._items:
                return self._hit(key), True
            key_lock = self._inflight.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:  # computed by a concurrent miss while we waited
                    return self._hit(key), True
            try:
                value = compute()
                with self._lock:
                    self.misses += 1
                    self._put(key, value)
            finally:
                with self._lock:
                    self._inflight.pop(key, None)
        return value, False

    def _hit(self, key: str):
        self.hits += 1
        self._items.move_to_end(key)
        return self._items[key]

    def _put(self, key: str, value) -> None:
        size = _nbytes(value)
        if size > self.budget_bytes:
            return  # larger than the whole budget: serve it, do not keep it
        while self._items and self._used + size > self.budget_bytes:
            old, _ = self._items.popitem(last=False)
            self._used -= self._sizes.pop(old)
        self._items[key] = value
        self._sizes[key] = size
        self._used += size

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return self._used

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._sizes.clear()
            self._used = 0

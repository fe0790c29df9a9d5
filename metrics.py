"""Prometheus metrics, served at /metrics on the app's own server.

Per request: one observation per stage in `sam2_stage_seconds{endpoint, variant, stage}` (stages
as in `stage_times.STAGES`: queue_wait, preprocess, encoder, decoder or propagation,
postprocess, nms, encoding), the JSON size of the answer in `sam2_response_bytes{endpoint,
variant}`, and `sam2_requests_total{endpoint, variant, outcome}` with outcome "ok", "rejected"
(bad input: the caller's error) or "error" (ours). Admission adds `sam2_busy_rejections_total`;
the embedding cache is read at scrape time (`sam2_embedding_cache_{hits,misses}_total`,
`sam2_embedding_cache_bytes`).
"""

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

REGISTRY = CollectorRegistry()

STAGE_SECONDS = Histogram(
    "sam2_stage_seconds", "Seconds one request spent in one stage.", ["endpoint", "variant", "stage"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300), registry=REGISTRY)
RESPONSE_BYTES = Histogram(
    "sam2_response_bytes", "Size of the JSON answer of one request.", ["endpoint", "variant"],
    buckets=(256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864), registry=REGISTRY)
REQUESTS = Counter("sam2_requests", "Requests handled, by outcome (ok, rejected = bad input, error = ours).",
                   ["endpoint", "variant", "outcome"], registry=REGISTRY)
BUSY_REJECTIONS = Counter("sam2_busy_rejections", "Requests turned away because the line was full.",
                          registry=REGISTRY)


def observe(endpoint: str, variant: str, seconds: dict[str, float], response_bytes: int | None,
            outcome: str) -> None:
    for stage, value in seconds.items():
        STAGE_SECONDS.labels(endpoint, variant, stage).observe(value)
    if response_bytes is not None:
        RESPONSE_BYTES.labels(endpoint, variant).observe(response_bytes)
    REQUESTS.labels(endpoint, variant, outcome).inc()


class CacheCollector:
    """The embedding cache's own counters, read when Prometheus scrapes."""

    def __init__(self, cache):
        self.cache = cache

    def collect(self):
        yield CounterMetricFamily("sam2_embedding_cache_hits", "Image-embedding cache hits.", value=self.cache.hits)
        yield CounterMetricFamily("sam2_embedding_cache_misses", "Image-embedding cache misses (encoder runs).",
                                  value=self.cache.misses)
        yield GaugeMetricFamily("sam2_embedding_cache_bytes", "Bytes held by the image-embedding cache.",
                                value=self.cache.used_bytes)


def watch_cache(cache) -> None:
    REGISTRY.register(CacheCollector(cache))


async def _scrape(request: Request) -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


def route() -> Route:
    """GET /metrics (pass in the app's routes: `app_kwargs={"routes": [metrics.route()]}`)."""
    return Route("/metrics", _scrape, methods=["GET"])

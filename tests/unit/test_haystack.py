import threading

import pytest

from niah.core.prompts.haystack_files import haystack_prefix
from niah.core.prompts.haystack_tokens import CACHE_PREFIX, load_haystack, loaded_haystacks
from niah.errors import HaystackError
from niah.models.tokenizer import SentencePieceTokenizer
from tests.fakes import MemoryBlobs


def test_haystack_prefix_accepts_names_prefixes_and_uris_in_the_bucket() -> None:
    assert haystack_prefix(None, "b") == "haystacks/paul_graham_essays/"
    assert haystack_prefix("mine", "b") == "haystacks/mine/"
    assert haystack_prefix("gs://b/haystacks/data/texts", "b") == "haystacks/data/texts/"
    assert haystack_prefix("haystacks/mine/", "b") == "haystacks/mine/"
    with pytest.raises(HaystackError, match="must be under gs://b/haystacks/"):
        haystack_prefix("gs://b/data/texts", "b")
    with pytest.raises(HaystackError, match="service's bucket"):
        haystack_prefix("gs://elsewhere/texts", "b")


def test_tokens_are_cached_once_and_reused(
    essay_blobs: MemoryBlobs, tokenizer: SentencePieceTokenizer
) -> None:
    loaded_haystacks.clear()
    first = load_haystack(essay_blobs, "haystacks/paul_graham_essays/", tokenizer)
    cached = [name for name in essay_blobs.objects if name.startswith(CACHE_PREFIX)]
    assert len(cached) == 1
    loaded_haystacks.clear()  # a new instance: must come from the cache object, not re-tokenize
    essay_blobs.writes.clear()
    second = load_haystack(essay_blobs, "haystacks/paul_graham_essays/", tokenizer)
    assert essay_blobs.writes == []
    assert second.text == first.text
    assert (second.ids == first.ids).all()


def test_concurrent_builders_store_one_object(
    essay_blobs: MemoryBlobs, tokenizer: SentencePieceTokenizer
) -> None:
    loaded_haystacks.clear()
    barrier = threading.Barrier(4)

    def build() -> None:
        barrier.wait()
        load_haystack(essay_blobs, "haystacks/paul_graham_essays/", tokenizer)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache_writes = [name for name in essay_blobs.writes if name.startswith(CACHE_PREFIX)]
    assert len(cache_writes) == 1


def test_empty_and_binary_haystacks_are_clear_errors(tokenizer: SentencePieceTokenizer) -> None:
    blobs = MemoryBlobs()
    with pytest.raises(HaystackError, match=r"holds no \.txt files"):
        load_haystack(blobs, "haystacks/none/", tokenizer)
    blobs.objects["haystacks/bin/a.txt"] = b"\xff\xfe\x00binary"
    with pytest.raises(HaystackError, match="not UTF-8"):
        load_haystack(blobs, "haystacks/bin/", tokenizer)
    blobs.objects["haystacks/blank/a.txt"] = b"  \n "
    with pytest.raises(HaystackError, match="empty"):
        load_haystack(blobs, "haystacks/blank/", tokenizer)


def test_a_local_path_is_refused_and_a_missing_haystack_lists_those_there(
    essay_blobs: MemoryBlobs,
) -> None:
    from niah.errors import RequestError
    from niah.service.runs.dispatch import dispatch_run
    from tests.fake_store import MemoryStore
    from tests.fakes import RecordingPublisher

    def dispatch(haystack_dir: str) -> RequestError:
        with pytest.raises(RequestError) as caught:
            dispatch_run(
                {"context_lengths": [1000], "haystack_dir": haystack_dir},
                store=MemoryStore(),
                publisher=RecordingPublisher(),
                blobs=essay_blobs,
            )
        return caught.value

    local = dispatch("/home/me/essays")
    assert local.field == "haystack_dir" and "looks like a local path" in local.message
    missing = dispatch("novels")
    assert missing.field == "haystack_dir"
    assert missing.message.endswith("use one of: paul_graham_essays, noise")

"""`tessera serve` driven by the official `openai` Python client: chat,
streaming, completions, stop sequences, seeds, errors as the client's
exception classes, and outputs identical to `tessera run` (greedy) — on the
tiny random chat model and on SmolLM2-135M. Multi-turn: the second turn's
prompt reuses the first turn's tokens (usage.prompt_tokens_details.cached_tokens)
and generates what a fresh server generates."""

import json
import urllib.request

import pytest

from conftest import run_tessera
from serve_helpers import Server, make_tiny_chat_model

openai = pytest.importorskip("openai")

SMOLLM2 = "smollm2-135m-instruct"


@pytest.fixture(scope="module", params=["tiny", SMOLLM2])
def served(request, tmp_path_factory, pulled_model_path):
    """(server, model argument, env) for each model."""
    if request.param == "tiny":
        model = make_tiny_chat_model(tmp_path_factory.mktemp("tiny_chat"))
        env = {"TESSERA_HOME": str(tmp_path_factory.mktemp("tessera_home"))}
    else:
        model, env = pulled_model_path(SMOLLM2), {}
    with Server(model, "--threads", 2, env=env) as s:
        yield s, model, env


def client_of(server, **kw):
    return openai.OpenAI(base_url=server.url + "/v1", api_key=kw.pop("api_key", "unused"), max_retries=0, **kw)


def test_models_lists_the_served_model(served):
    server, _, _ = served
    assert [m.id for m in client_of(server).models.list().data] == [server.model_name]


def test_chat_greedy_equals_tessera_run(served):
    server, model, env = served
    reply = client_of(server).chat.completions.create(
        model=server.model_name, messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=24, temperature=0)
    run = json.loads(run_tessera("run", model, "--chat", "-p", "What is the capital of France?", "-n", 24, "--json",
                                 env=env).stdout)
    assert reply.choices[0].message.content == run["text"]
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].finish_reason == ("length" if run["finish_reason"] in ("length", "context") else "stop")
    assert reply.usage.prompt_tokens == len(run["prompt_ids"])
    assert reply.usage.completion_tokens == len(run["ids"])
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_completion_greedy_equals_tessera_run(served):
    server, model, env = served
    reply = client_of(server).completions.create(model=server.model_name, prompt="Once upon a time", max_tokens=20,
                                                 temperature=0)
    run = json.loads(run_tessera("run", model, "-p", "Once upon a time", "-n", 20, "--json", env=env).stdout)
    assert reply.choices[0].text == run["text"]
    assert reply.object == "text_completion"


def test_streaming_chat_concatenates_to_the_whole_reply(served):
    server, _, _ = served
    client = client_of(server)
    messages = [{"role": "user", "content": "Write a short poem about rain."}]
    whole = client.chat.completions.create(model=server.model_name, messages=messages, max_tokens=32, temperature=0)
    pieces, finish, usage, roles = [], None, None, []
    for chunk in client.chat.completions.create(model=server.model_name, messages=messages, max_tokens=32,
                                                temperature=0, stream=True, stream_options={"include_usage": True}):
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.role:
                roles.append(choice.delta.role)
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason:
                finish = choice.finish_reason
    assert "".join(pieces) == whole.choices[0].message.content
    assert len(pieces) > 1
    assert roles == ["assistant"]
    assert finish == whole.choices[0].finish_reason
    assert usage.completion_tokens == whole.usage.completion_tokens


def test_streaming_completion(served):
    server, _, _ = served
    client = client_of(server)
    whole = client.completions.create(model=server.model_name, prompt="The sea", max_tokens=16, temperature=0)
    text = "".join(c.choices[0].text for c in client.completions.create(
        model=server.model_name, prompt="The sea", max_tokens=16, temperature=0, stream=True) if c.choices)
    assert text == whole.choices[0].text


def test_stop_sequences(served):
    server, _, _ = served
    client = client_of(server)
    messages = [{"role": "user", "content": "List three fruits, one per line."}]
    free = client.chat.completions.create(model=server.model_name, messages=messages, max_tokens=40, temperature=0,
                                          extra_body={"ignore_eos": True}).choices[0].message.content
    assert len(free) > 6, free
    stop = free[len(free) // 2:len(free) // 2 + 2]  # a string the reply is known to contain
    cut = free[:free.find(stop)]
    for stream in (False, True):
        if stream:
            text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
                model=server.model_name, messages=messages, max_tokens=40, temperature=0, stop=[stop, "\x00never"],
                stream=True, extra_body={"ignore_eos": True}) if c.choices)
        else:
            r = client.chat.completions.create(model=server.model_name, messages=messages, max_tokens=40,
                                               temperature=0, stop=stop, extra_body={"ignore_eos": True})
            text = r.choices[0].message.content
            assert r.choices[0].finish_reason == "stop"
        assert text == cut, (stop, free, text)


def test_seed_makes_sampling_repeatable(served):
    server, _, _ = served
    client = client_of(server)

    def sample(seed):
        return client.chat.completions.create(model=server.model_name, messages=[{"role": "user", "content": "Hi"}],
                                              max_tokens=16, temperature=1.0, top_p=0.95, seed=seed,
                                              extra_body={"ignore_eos": True}).choices[0].message.content

    assert sample(7) == sample(7)
    assert len({sample(s) for s in (1, 2, 3, 4)}) > 1


def test_max_tokens_is_capped_by_the_server(served):
    server, model, env = served
    r = client_of(server).completions.create(model=server.model_name, prompt="a", max_tokens=100000, temperature=0,
                                             extra_body={"ignore_eos": True})
    assert r.usage.completion_tokens <= 2048


def test_errors_are_the_clients_exception_classes(served):
    server, _, _ = served
    client = client_of(server)
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert e.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=server.model_name, messages=[{"role": "user", "content": "hi"}],
                                       max_tokens=-3)
    assert e.value.body["param"] == "max_tokens"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=server.model_name, messages=[])
    # Still serving.
    assert client.chat.completions.create(model=server.model_name, messages=[{"role": "user", "content": "hi"}],
                                          max_tokens=2).usage.completion_tokens >= 1


def test_api_key_with_the_client(tmp_path):
    model = make_tiny_chat_model(tmp_path / "m")
    with Server(model, "--api-key", "k-123", env={"TESSERA_HOME": str(tmp_path / "home")}) as server:
        with pytest.raises(openai.AuthenticationError):
            client_of(server, api_key="wrong").models.list()
        assert client_of(server, api_key="k-123").models.list().data[0].id == server.model_name


def test_second_turn_reuses_the_first_turns_tokens_and_matches_a_fresh_server(served):
    server, model, env = served
    client = client_of(server)
    turn1 = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a planet."}]
    r1 = client.chat.completions.create(model=server.model_name, messages=turn1, max_tokens=12, temperature=0)
    turn2 = turn1 + [{"role": "assistant", "content": r1.choices[0].message.content},
                     {"role": "user", "content": "And a star?"}]
    r2 = client.chat.completions.create(model=server.model_name, messages=turn2, max_tokens=12, temperature=0)
    reused = r2.usage.prompt_tokens_details.cached_tokens
    first_turn_tokens = r1.usage.prompt_tokens + r1.usage.completion_tokens
    if SMOLLM2 in str(model):
        # The slot holds turn one's prompt and every reply token but the last
        # (generated, never run); the template renders the reply back to the
        # same tokens, so all of them are reused.
        assert reused == first_turn_tokens - 1, (reused, r1.usage, r2.usage)
    else:
        # The tiny model's random bytes can re-render differently (invalid
        # UTF-8 becomes U+FFFD), so at least turn one's prompt is reused.
        assert r1.usage.prompt_tokens <= reused <= first_turn_tokens - 1
    assert r2.model_extra["timings"]["prefill_tokens"] == r2.usage.prompt_tokens - reused
    assert r2.model_extra["timings"]["reuse_note"] == ""
    with Server(model, "--threads", 2, env=env) as fresh:
        r2_fresh = client_of(fresh).chat.completions.create(model=fresh.model_name, messages=turn2, max_tokens=12,
                                                            temperature=0)
        assert r2_fresh.usage.prompt_tokens_details.cached_tokens == 0
    assert r2.choices[0].message.content == r2_fresh.choices[0].message.content


def test_shared_system_prompt_is_served_from_the_prefix_cache(served):
    # One slot: conversation B takes it over from A (their shared prefix goes
    # into the prefix cache as B diverges), then an unrelated completion; A's
    # next turn starts from the shared prefix in the cache, not from zero,
    # and replies what a fresh server replies.
    server, model, env = served
    client = client_of(server)
    system = {"role": "system", "content": "You are a meticulous assistant for a small bakery. Keep answers short, "
                                           "friendly and accurate; never invent prices or opening hours."}
    a1 = [system, {"role": "user", "content": "Do you sell bread?"}]
    ra1 = client.chat.completions.create(model=server.model_name, messages=a1, max_tokens=8, temperature=0)
    b1 = [system, {"role": "user", "content": "What about cakes?"}]
    rb1 = client.chat.completions.create(model=server.model_name, messages=b1, max_tokens=8, temperature=0)
    client.completions.create(model=server.model_name, prompt="Unrelated.", max_tokens=4, temperature=0)
    a2 = a1 + [{"role": "assistant", "content": ra1.choices[0].message.content},
               {"role": "user", "content": "Thanks!"}]
    ra2 = client.chat.completions.create(model=server.model_name, messages=a2, max_tokens=8, temperature=0)
    # B shares the system message and the user header with A: more than 20
    # tokens with either tokenizer, fewer than its whole prompt.
    shared = rb1.usage.prompt_tokens_details.cached_tokens
    assert 20 <= shared < rb1.usage.prompt_tokens
    # A's turn two finds that same shared prefix in the cache.
    assert ra2.model_extra["timings"]["reused_from"] == "prefix cache", ra2.model_extra["timings"]
    assert ra2.usage.prompt_tokens_details.cached_tokens == shared
    health = json.loads(urllib.request.urlopen(server.url + "/health").read())
    assert health["prefix_cache"]["entries"] >= 1 and health["prefix_cache"]["bytes"] > 0
    with Server(model, "--threads", 2, env=env) as fresh:
        want = client_of(fresh).chat.completions.create(model=fresh.model_name, messages=a2, max_tokens=8,
                                                        temperature=0)
    assert ra2.choices[0].message.content == want.choices[0].message.content


def test_sampling_without_a_seed_differs_between_requests(served):
    server, _, _ = served
    client = client_of(server)
    replies = {client.chat.completions.create(model=server.model_name, messages=[{"role": "user", "content": "Hi"}],
                                              max_tokens=16, temperature=1.0,
                                              extra_body={"ignore_eos": True}).choices[0].message.content
               for _ in range(3)}
    assert len(replies) > 1


def test_speculative_decoding_gives_the_same_greedy_reply(served):
    server, _, _ = served
    client = client_of(server)
    messages = [{"role": "user", "content": "Repeat after me: the quick brown fox jumps over the lazy dog. "
                                            "The quick brown fox jumps over the lazy dog."}]

    def reply(mode):
        return client.chat.completions.create(model=server.model_name, messages=messages, max_tokens=32,
                                              temperature=0, extra_body={"speculative": mode}).choices[0].message.content

    assert reply("lookup") == reply("auto") == reply("off")
    with pytest.raises(openai.BadRequestError) as e:
        reply("sometimes")
    assert e.value.body["param"] == "speculative"


def test_disk_prefix_cache_serves_a_restarted_server(served, tmp_path):
    # The first server caches the system prompt's state on disk; a second
    # server (a restart) starts a new conversation with it from that file and
    # replies what a server without any cache replies.
    _, model, env = served
    system = {"role": "system", "content": "You are a meticulous assistant for a small bakery. Keep answers short, "
                                           "friendly and accurate; never invent prices or opening hours."}
    disk = ["--threads", 2, "--prefix-cache-disk-mb", 64, "--prefix-cache-dir", tmp_path / "prefixes"]
    with Server(model, *disk, env=env) as first:
        client_of(first).chat.completions.create(
            model=first.model_name, messages=[system, {"role": "user", "content": "Bread?"}], max_tokens=4,
            temperature=0)
    assert len(list((tmp_path / "prefixes").glob("*.tsession"))) == 1
    messages = [system, {"role": "user", "content": "Do you open on Sundays?"}]
    with Server(model, *disk, env=env) as second:
        r = client_of(second).chat.completions.create(model=second.model_name, messages=messages, max_tokens=8,
                                                      temperature=0)
    assert r.model_extra["timings"]["reused_from"] == "disk", r.model_extra["timings"]
    assert r.usage.prompt_tokens_details.cached_tokens >= 20
    with Server(model, "--threads", 2, "--prefix-cache-mb", 0, env=env) as plain:
        want = client_of(plain).chat.completions.create(model=plain.model_name, messages=messages, max_tokens=8,
                                                        temperature=0)
    assert r.choices[0].message.content == want.choices[0].message.content


def test_clients_cannot_name_a_draft_model(served):
    server, _, _ = served
    client = client_of(server)
    for mode, words in (("draft:/etc/passwd", "cannot name"), ("draft-all:/etc/passwd", "cannot name"),
                        ("draft", "no draft model")):
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model=server.model_name, messages=[{"role": "user", "content": "hi"}],
                                           max_tokens=2, extra_body={"speculative": mode})
        assert e.value.body["param"] == "speculative" and words in e.value.body["message"], e.value.body


def test_server_draft_model_gives_the_same_greedy_reply(served):
    _, model, env = served
    messages = [{"role": "user", "content": "Name three rivers and one sea."}]
    with Server(model, "--threads", 2, "--draft", model, env=env) as s:
        client = client_of(s)

        def reply(mode):
            r = client.chat.completions.create(model=s.model_name, messages=messages, max_tokens=24, temperature=0,
                                               extra_body={"speculative": mode})
            return r.choices[0].message.content

        assert reply("draft") == reply("off")

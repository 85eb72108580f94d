"""Hybrid search against the real database: ACL inside every stage, filters, fusion, rerank backends."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from athena.principals import Principal
from knowledge.services import IngestOptions, files_ingest, folder_scan
from knowledge.text import query_terms
from retrieval.search import (
    SYNONYM_WEIGHT,
    correct_terms,
    embed_query,
    question_as_meant,
    search,
    understand,
)
from retrieval.stages import bm25_search, dense_search, graph_search
from retrieval.types import Filters, SearchConfig
from tests.factories import UserFactory
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SECRET = "The break-glass password vault for core routers is opened with the orange YubiKey in safe 7."


def _ingest(root: Path, **options) -> None:
    files = [(rel, str(p)) for rel, p in folder_scan(root)]
    summary = files_ingest(root=str(root), files=files, options=IngestOptions(**options))
    assert summary.failed == 0, summary.errors


def _principal(username: str, *groups: str, superuser: bool = False) -> Principal:
    return Principal.from_user(UserFactory(username=username, groups=groups, superuser=superuser))


@pytest.fixture()
def corpus(tmp_path):
    public = write_docs(
        tmp_path / "public",
        {
            f"runbook-{i}.md": f"# Runbook {i}\n\nWhen interface {i} flaps, check the optics and the BGP session on "
            f"router {i}. Escalate after {i + 5} minutes.\n"
            for i in range(6)
        },
    )
    _ingest(public, department="noc")
    restricted = write_docs(
        tmp_path / "restricted",
        {
            "break-glass.md": f"# Break-glass access to core routers\n\n{SECRET}\n",
        },
    )
    _ingest(restricted, access_tier="restricted", acl_groups=("noc-admins",), department="security")
    return {
        "outsider": _principal("outsider", "employees"),
        "insider": _principal("insider", "noc-admins"),
        "superuser": _principal("root-admin", superuser=True),
    }


QUESTION = "How is the break-glass password vault for core routers opened?"


@pytest.mark.django_db(transaction=True)
def test_restricted_document_never_reaches_outsiders_from_any_stage(corpus):
    from knowledge.models import Chunk

    secret_ids = set(Chunk.objects.filter(document__source="break-glass.md").values_list("id", flat=True))
    analysis = understand(QUESTION)
    for who in ("outsider", "superuser"):  # superuser status grants nothing
        principal = corpus[who]
        runs = {
            "dense": dense_search(embed_query(QUESTION), principal, Filters()),
            "bm25": bm25_search(
                [(t, 1.0) for t in query_terms(QUESTION)], principal, Filters(), max_df_ratio=1.0
            ),
            "graph": graph_search(analysis.entities or [("protocol", "bgp")], principal, Filters()),
        }
        for name, run in runs.items():
            assert not secret_ids & {s.id for s in run}, (who, name)
        result = search(QUESTION, principal)
        assert "break-glass.md" not in result.documents()
        assert all(SECRET not in hit.text for hit in result.hits)
    allowed = search(QUESTION, corpus["insider"])
    assert allowed.documents()[0] == "break-glass.md"


@pytest.mark.django_db(transaction=True)
def test_selective_filter_still_returns_a_full_top_k(tmp_path):
    many = write_docs(
        tmp_path / "noc",
        {f"n{i}.md": f"# NOC note {i}\n\nOSPF area {i} timers and BGP peer {i}.\n" for i in range(60)},
    )
    _ingest(many, department="noc")
    few = write_docs(
        tmp_path / "dba",
        {f"d{i}.md": f"# DBA note {i}\n\nPostgreSQL replica {i} lag alarm.\n" for i in range(12)},
    )
    _ingest(few, department="dba", vendor="PostgreSQL")
    anyone = Principal(None, "anyone")
    vec = embed_query("OSPF timers")
    for filters in (Filters(departments=("dba",)), Filters(vendors=("PostgreSQL",))):
        run = dense_search(vec, anyone, filters, k=10)
        assert len(run) == 10
        result = search("OSPF timers", anyone, filters)
        assert len(result.hits) == 10
        assert all(source.startswith("d") for source in result.documents())


@pytest.mark.django_db(transaction=True)
def test_fusion_modes_and_stage_timings(corpus):
    for mode in ("combsum", "rrf"):
        result = search(
            "interface flaps escalate minutes", corpus["outsider"], None, SearchConfig(fusion=mode)
        )
        assert result.hits and {"dense", "bm25", "graph", "fusion", "rerank", "mmr", "total"} <= set(
            result.timings_ms
        )
        assert len(result.documents()) == len(set(result.documents()))
    with pytest.raises(ValueError, match="combsum"):
        search("x", corpus["outsider"], None, SearchConfig(fusion="borda"))


def _tiny_cross_encoder(path: Path) -> Path:
    """A real (random-weight) BERT sequence classifier saved like any CrossEncoder checkpoint."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "bgp",
        "router",
        "interface",
        "the",
        "is",
        "break",
        "glass",
        "vault",
        "flaps",
        "check",
        "optics",
        "session",
        "how",
        "opened",
        "core",
        "password",
    ]
    path.mkdir(parents=True)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizer(str(path / "vocab.txt")).save_pretrained(path)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(path)
    return path


@pytest.mark.django_db(transaction=True)
def test_cross_encoder_backend_loads_a_local_model_and_reranks(corpus, tmp_path):
    from retrieval.rerank import CrossEncoderReranker, get_reranker

    model = _tiny_cross_encoder(tmp_path / "tiny-ce")
    scores = CrossEncoderReranker(model=str(model)).score("bgp session", ["check the bgp session", "optics"])
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)
    setting = {"BACKEND": "retrieval.rerank.CrossEncoderReranker", "OPTIONS": {"model": str(model)}}
    with override_settings(ATHENA_RERANKER=setting):
        assert isinstance(get_reranker(), CrossEncoderReranker)
        result = search("interface flaps check optics", corpus["outsider"])
        assert result.hits and "rerank" in result.timings_ms
    assert not isinstance(get_reranker(), CrossEncoderReranker)  # cache cleared when the setting reverts


@pytest.mark.django_db
def test_an_option_written_with_its_value_attached_is_also_searched_bare():
    terms = dict(
        understand("`rsyslogd -N1`: what is it for? And `ping -c4`, `ip -4 route`, `--http2`?").terms
    )
    assert terms["=-n1"] == 1.0 and terms["=-n"] == SYNONYM_WEIGHT  # the manual documents "-N level"
    assert terms["=-c"] == SYNONYM_WEIGHT
    # only one-letter options carry attached values: "--http2" is a name, not "--http" with 2
    assert not any(t.startswith("=-") and t not in ("=-n1", "=-n", "=-c4", "=-c", "=--http2") for t in terms)


@pytest.mark.django_db(transaction=True)
def test_a_misspelt_setting_name_is_also_searched_as_the_readable_name_closest_to_it(tmp_path):
    public = write_docs(
        tmp_path / "public",
        {
            "lvs.md": "# LVS\n\nThe `persistence_timeout` setting keeps a client on one real server; "
            "default 6 minutes.\n",
            "other.md": "# Other\n\nThe `delay_loop` setting sets the health check interval.\n",
        },
    )
    _ingest(public)
    restricted = write_docs(
        tmp_path / "restricted", {"vault.md": "# Vault\n\nThe `vault_unlock_code` is rotated monthly.\n"}
    )
    _ingest(restricted, access_tier="restricted", acl_groups=("noc-admins",))
    who = _principal("outsider", "employees")
    insider = _principal("insider", "noc-admins")

    result = search("default value of persistance_timeout in keepalived?", who)
    assert result.corrections == {"=persistance_timeout": "=persistence_timeout"}
    assert "=persistence_timeout" in result.query_terms
    assert result.hits[0].source == "lvs.md"
    # a name spelt right, or one too far from any name, is left alone
    assert correct_terms(["=delay_loop", "=persistnce_timeot_x"], who) == {}
    # a name only restricted documents hold is never suggested to someone who cannot read them
    assert correct_terms(["=vault_unlock_cod"], who) == {}
    assert correct_terms(["=vault_unlock_cod"], insider) == {"=vault_unlock_cod": "=vault_unlock_code"}


@pytest.mark.django_db(transaction=True)
def test_a_misspelt_word_is_also_searched_as_the_readable_word_closest_to_it(tmp_path):
    docs = {
        "mtu.md": "# MTU\n\nA router that cannot forward a packet sends back an ICMP message.\n",
        "arp.md": "# ARP\n\nThe host will receive the reply on the same interface.\n",
        "nat.md": "# NAT\n\nThe gateway will receive traffic for the translated address.\n",
    }
    _ingest(write_docs(tmp_path / "public", docs))
    who = _principal("outsider", "employees")

    result = search("when does the host recieve the reply", who)
    # a swap of two adjacent letters is one edit ("reciev" -> "receiv")
    assert result.corrections == {"reciev": "receiv"}
    assert result.hits[0].source == "arp.md"
    # a known word, a short one, or a correction found in only one chunk is left alone
    assert correct_terms(["router", "mesage", "pakcet"], who) == {}


@pytest.mark.django_db(transaction=True)
def test_a_misspelt_word_whose_stem_is_no_neighbour_of_the_right_stem_is_corrected_as_typed(tmp_path):
    """The stemmer takes the ending off a word spelt right only: "numeric" is "numer", "nuemric" stays whole,
    three edits away, and "configuration" is "configur" where "confiugration" is "confiugr"."""
    docs = {
        "table.md": "# Tables\n\nThe main table has the numeric ID 254.\n",
        "ids.md": "# IDs\n\nEach route table has a numeric ID and a name.\n",
        "conf.md": "# Configuration\n\nThe configuration lives in one file.\n",
        "conf2.md": "# More configuration\n\nA configuration change needs a reload.\n",
        "walk.md": "# Walks\n\nThe walker will recurse into each folder.\n",
        "walk2.md": "# More walks\n\nIt does not recurse into links.\n",
    }
    _ingest(write_docs(tmp_path / "public", docs))
    who = _principal("outsider", "employees")

    question = "what nuemric ID does the main table have?"
    result = search(question, who)
    assert result.corrections == {"nuemric": "numer"}
    assert "numer" in result.query_terms
    question = "where does the confiugration live?"
    assert correct_terms(query_terms(question), who, question) == {"confiugr": "configur"}
    # a word that is no slip of a readable word, or whose correction only one chunk holds, is left alone
    question = "which nuemric zyphraxx needs a relaod"
    assert correct_terms(query_terms(question), who, question) == {"nuemric": "numer"}
    # nor a name the corpus lacks that a changed letter would make a word it has ("recurser" is "recurs")
    question = "what does the recursor cache"
    assert correct_terms(query_terms(question), who, question) == {}


@pytest.mark.django_db(transaction=True)
def test_a_word_is_corrected_as_typed_on_what_the_asker_may_read_alone(tmp_path):
    _ingest(
        write_docs(tmp_path / "public", {"nat.md": "# NAT\n\nThe router keeps the translated address.\n"})
    )
    vault = {f"vault{i}.md": f"# Vault {i}\n\nEach vault key has a numeric index {i}.\n" for i in range(2)}
    _ingest(write_docs(tmp_path / "restricted", vault), access_tier="restricted", acl_groups=("noc-admins",))
    question = "which nuemric index has the key"
    assert correct_terms(query_terms(question), _principal("outsider", "employees"), question) == {}
    insider = _principal("insider", "noc-admins")
    assert correct_terms(query_terms(question), insider, question) == {"nuemric": "numer"}


def test_a_letter_too_many_is_one_typed_with_its_neighbour_and_a_name_s_own_end_is_no_slip():
    from agents.steps.retrieve import everyday_terms
    from retrieval.search import slips_undone

    # a letter typed twice, or a key beside the one meant caught with it, is undone
    assert "configuration" in slips_undone("configuratiion")
    assert "numeric" in slips_undone("nuemric") and "checked" in slips_undone("chceked")
    assert "network" in slips_undone("netwoerk")
    # a daemon's or a tool's own first or last letter is not taken for a slip of an everyday word
    for name in ("systemd", "auditd", "fluentd", "stunnel", "rclone", "cgroups", "patroni", "autofs"):
        assert name not in str(everyday_terms(f"how do I restart {name} now")), name
        assert name[:-1] not in slips_undone(name) and name[1:] not in slips_undone(name), name


def test_a_word_an_edit_from_a_readable_one_is_misspelt_only_where_one_slip_makes_it():
    from retrieval.search import one_slip_apart

    # two letters swapped, a letter typed twice or with its neighbour, one left out, a key beside the right one,
    # one vowel for another
    for typed, meant in [
        ("reciev", "receiv"),
        ("netwoerk", "network"),
        ("adress", "address"),
        ("retransmis", "retransmiss"),
        ("roiter", "router"),
        ("seperat", "separat"),
    ]:
        assert one_slip_apart(typed, meant), (typed, meant)
    # a letter changed to one far from it on the keyboard, one added at the start, or the first one left out:
    # names the corpus lacks made of words it has
    for typed, meant in [("obcerv", "observ"), ("bixel", "pixel"), ("xfastd", "fastd"), ("astd", "fastd")]:
        assert not one_slip_apart(typed, meant), (typed, meant)


@pytest.mark.django_db(transaction=True)
def test_a_name_the_corpus_lacks_is_not_read_as_a_word_it_has_that_a_changed_letter_makes(tmp_path):
    """The name "Obcerv" is one changed letter from the stem of "observe": read as that word, a question on a
    product the corpus lacks lost the sign that the corpus lacks it, and was searched and embedded as another."""
    from agents.steps.retrieve import distinctive_unknown_terms

    docs = {
        f"obs{i}.md": f"# Monitoring {i}\n\nObserve the router before the change and watch the link {i}.\n"
        for i in range(2)
    }
    _ingest(write_docs(tmp_path / "public", docs))
    who = _principal("outsider", "employees")
    question = "how do I install the Obcerv agent on a router"
    terms = query_terms(question)
    assert correct_terms(terms, who, question) == {}
    assert "obcerv" in distinctive_unknown_terms(terms, who)
    # a key beside the right one is still a slip, and the word is read as meant
    question = "what should I obsetve on the roiter"
    assert correct_terms(query_terms(question), who, question) == {"obsetv": "observ", "roiter": "router"}


@pytest.mark.django_db(transaction=True)
def test_a_misspelt_question_is_embedded_as_the_asker_meant_it(tmp_path):
    """A corrected word was searched in BM25 only, as an expansion at SYNONYM_WEIGHT: the question's embedding
    (the dense search, the reranker, MMR) still read the slip, a word the model never saw, and placed the
    question away from what answers it."""
    docs = {
        "arp.md": "# ARP\n\nThe host will receive the reply on the same interface.\n",
        "nat.md": "# NAT\n\nThe gateway will receive traffic for the translated address.\n",
        "mtu.md": "# MTU\n\nA router that cannot forward a packet sends back an ICMP message.\n",
    }
    _ingest(write_docs(tmp_path / "public", docs))
    who = _principal("outsider", "employees")

    typed, meant = "when does the host recieve the reply", "when does the host receive the reply"
    result = search(typed, who)
    assert result.corrections == {"reciev": "receiv"}
    assert question_as_meant(typed, result.corrections) == meant
    spelt_right = search(meant, who)
    # the question is embedded as meant, and the correction searched with the weight of the word it corrects
    # (at SYNONYM_WEIGHT the rest of the question outweighed it): both read as the question spelt right
    for source in ("dense", "bm25"):
        scores = {hit.chunk_id: hit.scores[source] for hit in result.hits}
        assert scores == {hit.chunk_id: hit.scores[source] for hit in spelt_right.hits}, source
    # each corrected word keeps the rest of what was typed; a word corrected whole is spelt out; an identifier
    # takes its whole-name correction
    assert question_as_meant("stop recieving alerts?", {"reciev": "receiv"}) == "stop receiving alerts?"
    assert question_as_meant("what nuemric ID", {"nuemric": "numer"}) == "what numeric ID"
    named = {"=persistance_timeout": "=persistence_timeout"}
    assert question_as_meant("default persistance_timeout?", named) == "default persistence_timeout?"
    # a question with nothing corrected is the question as typed
    assert question_as_meant(typed, {}) is typed


@pytest.mark.django_db(transaction=True)
def test_a_correction_is_offered_on_what_the_asker_may_read_alone(tmp_path):
    """Whether a word is suggested for a misspelt one depended on documents the asker cannot read: their chunks
    were counted against the two a word correction needs, and the eight candidates nearest by trigrams were cut
    before the access check, so terms only restricted documents hold could push a readable one out."""
    _ingest(
        write_docs(tmp_path / "public", {"nat.md": "# NAT\n\nThe router keeps the translated address.\n"})
    )
    vault = {"vault.md": "# Vault\n\nThe router of the vault network is rotated monthly.\n"}
    _ingest(write_docs(tmp_path / "restricted", vault), access_tier="restricted", acl_groups=("noc-admins",))
    who = _principal("outsider", "employees")
    insider = _principal("insider", "noc-admins")
    # "router" is in one chunk the outsider may read: one short of the two a word correction needs
    assert correct_terms(["ruoter"], who) == {}
    assert correct_terms(["ruoter"], insider) == {"ruoter": "router"}

    # nine terms nearer "ruoter" by trigrams than "router" (two edits away, so never a correction themselves),
    # each in two chunks that only the insider may read; and a second chunk with "router" that anyone may read
    near = " ".join(f"ruoter{letter}x" for letter in "bcdfhjkmp")
    crowd = {f"near{i}.md": f"# Near {i}\n\nLinks {near}.\n" for i in range(2)}
    _ingest(write_docs(tmp_path / "crowd", crowd), access_tier="restricted", acl_groups=("noc-admins",))
    _ingest(write_docs(tmp_path / "public2", {"edge.md": "# Edge\n\nEach router answers ARP.\n"}))
    assert correct_terms(["ruoter"], who) == {"ruoter": "router"}


@pytest.mark.django_db(transaction=True)
def test_dense_search_reads_only_vectors_the_configured_embedder_made(corpus):
    """After an upgrade or a change of ATHENA_EMBEDDER_*, the chunks keep the vectors of the model that made them
    until `manage.py reembed` has reached them (bootstrap runs it; a deploy runs it as a job, while questions
    are answered). A question's vector is compared only with vectors of its own model: another model's are not
    comparable (ranked as noise), and those chunks are found by BM25 and the graph meanwhile."""
    from knowledge.models import Chunk

    stale = ["runbook-0.md", "runbook-1.md", "runbook-2.md"]
    Chunk.objects.filter(document__source__in=stale).update(embedding_model="an-older-embedder")
    question = "What should I check when interface 1 flaps on router 1?"
    result = search(question, corpus["outsider"], Filters())
    by_source = {hit.source: hit for hit in result.hits}
    assert "runbook-1.md" in by_source  # still found (BM25), not lost while it waits for its new vectors
    # a hit carries each source's score, 0 where that source did not return it
    assert [by_source[source].scores["dense"] for source in stale if source in by_source] == [0.0] * len(
        [source for source in stale if source in by_source]
    )
    assert any(hit.scores["dense"] > 0 for hit in result.hits if hit.source not in stale)


@pytest.mark.django_db(transaction=True)
def test_a_number_is_never_corrected_to_another(tmp_path):
    """An address or a numbered name the corpus lacks was 'corrected' to one an edit away ("10.20.0.53" to
    "10.0.0.253"), and searched and embedded as that: the asker's own number read as another."""
    docs = {
        f"net{i}.md": f"# Net {i}\n\nThe resolver at 10.0.0.253 serves vlan_101 and sets retry_limit_3.\n"
        for i in range(2)
    }
    _ingest(write_docs(tmp_path / "public", docs))
    who = _principal("outsider", "employees")
    question = "is vlan_100 served by 10.20.0.53"
    assert correct_terms(query_terms(question), who, question) == {}
    # a name misspelt around the same number is still corrected
    question = "what does retyr_limit_3 do"
    assert correct_terms(query_terms(question), who, question) == {"=retyr_limit_3": "=retry_limit_3"}

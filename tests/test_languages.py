"""A sample's language, detected once or given, and sentences split by that language's rules.

Every expected split in German, Spanish, French, Hindi, Japanese and Chinese was written by
hand, sentence by sentence, from what a reader of the language takes for one sentence; none was
copied from the splitter's output. The Chinese and Japanese texts are written with their own
(fullwidth) punctuation, which is the point. The English ones are what English rules gave
before languages were told apart, which must not move.
"""

# ruff: noqa: RUF001

from __future__ import annotations

import hashlib
import json

import pytest
from pysbd.languages import LANGUAGE_CODES

from ragmeter import evaluate
from ragmeter.data import load_samples
from ragmeter.judges.base import identity_of
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.language import (
    detect_language,
    keyed_language,
    language_code,
    language_of,
)
from ragmeter.manifest import RUN_FILE, RunRecord
from ragmeter.metrics import AnswerRelevance, ContextRelevance, Faithfulness
from ragmeter.metrics.faithfulness import STATEMENTS
from ragmeter.pipeline import ItemKeys
from ragmeter.sample import Sample
from ragmeter.selftest.gaming_cases import LONG_CONTEXT
from ragmeter.session import JudgeSession
from ragmeter.testset.chunking import chunk_document
from ragmeter.testset.documents import Document
from ragmeter.text import SENTENCE_RULES, sentence_rule, split_sentences

from .conftest import routed, yes_no

EIFFEL_DE = (
    "Der Eiffelturm steht in Paris. Er wurde zur Weltausstellung 1889 errichtet und am "
    "31. März 1889 eingeweiht. Er ist 330 Meter hoch."
)

SPLITS: dict[str, list[tuple[str, list[str]]]] = {
    "de": [
        (
            EIFFEL_DE,
            [
                "Der Eiffelturm steht in Paris.",
                "Er wurde zur Weltausstellung 1889 errichtet und am 31. März 1889 eingeweiht.",
                "Er ist 330 Meter hoch.",
            ],
        ),
        (
            "Am 3. Oktober 1990 trat die DDR der Bundesrepublik bei. Seitdem ist der 3. Oktober "
            "ein gesetzlicher Feiertag. Gefeiert wird mit Konzerten, Reden usw. in der Hauptstadt.",
            [
                "Am 3. Oktober 1990 trat die DDR der Bundesrepublik bei.",
                "Seitdem ist der 3. Oktober ein gesetzlicher Feiertag.",
                "Gefeiert wird mit Konzerten, Reden usw. in der Hauptstadt.",
            ],
        ),
        (
            "Prof. Dr. Schmidt leitet das Institut seit 2015. Es hat ca. 40 Mitarbeiter. Wie "
            "viele davon promovieren? Etwa die Hälfte!",
            [
                "Prof. Dr. Schmidt leitet das Institut seit 2015.",
                "Es hat ca. 40 Mitarbeiter.",
                "Wie viele davon promovieren?",
                "Etwa die Hälfte!",
            ],
        ),
        (
            "Die Inflation lag im Mai bei 2,4 Prozent. Im Vorjahr waren es noch 6,1 Prozent "
            "gewesen. Die Zentralbank senkte daraufhin den Leitzins.",
            [
                "Die Inflation lag im Mai bei 2,4 Prozent.",
                "Im Vorjahr waren es noch 6,1 Prozent gewesen.",
                "Die Zentralbank senkte daraufhin den Leitzins.",
            ],
        ),
        (
            "Sie sagte: „Wir kommen morgen.“ Dann ging sie nach Hause.",
            ["Sie sagte: „Wir kommen morgen.“", "Dann ging sie nach Hause."],
        ),
    ],
    "es": [
        (
            "La Torre Eiffel mide 330 metros de altura. Fue inaugurada el 31 de marzo de 1889. "
            "¿Sabías que muchos artistas la criticaron? ¡Hoy es el símbolo de París!",
            [
                "La Torre Eiffel mide 330 metros de altura.",
                "Fue inaugurada el 31 de marzo de 1889.",
                "¿Sabías que muchos artistas la criticaron?",
                "¡Hoy es el símbolo de París!",
            ],
        ),
        (
            "El Dr. García trabaja en el hospital desde 2010. Atiende a unos 30 pacientes al "
            "día. Su consulta está en la Avda. de la Constitución.",
            [
                "El Dr. García trabaja en el hospital desde 2010.",
                "Atiende a unos 30 pacientes al día.",
                "Su consulta está en la Avda. de la Constitución.",
            ],
        ),
        (
            "La población creció un 2,5 % en 2020. Sin embargo, la economía cayó un 11 %. Los "
            "expertos esperan una recuperación lenta.",
            [
                "La población creció un 2,5 % en 2020.",
                "Sin embargo, la economía cayó un 11 %.",
                "Los expertos esperan una recuperación lenta.",
            ],
        ),
        (
            "El Sr. Pérez llegó tarde a la reunión. Nadie le dijo nada. La Sra. López, en "
            "cambio, se enfadó mucho.",
            [
                "El Sr. Pérez llegó tarde a la reunión.",
                "Nadie le dijo nada.",
                "La Sra. López, en cambio, se enfadó mucho.",
            ],
        ),
        (
            "Lo confirmó la Dra. Ruiz ayer por la tarde. El informe tiene 25 págs. en total.",
            ["Lo confirmó la Dra. Ruiz ayer por la tarde.", "El informe tiene 25 págs. en total."],
        ),
    ],
    "fr": [
        (
            "La tour Eiffel se trouve à Paris. Elle a été inaugurée le 31 mars 1889. Elle mesure "
            "330 mètres de haut.",
            [
                "La tour Eiffel se trouve à Paris.",
                "Elle a été inaugurée le 31 mars 1889.",
                "Elle mesure 330 mètres de haut.",
            ],
        ),
        (
            "M. Dupont habite à Lyon depuis vingt ans. Il travaille avec Mme Martin. "
            "Connaissez-vous leur entreprise ? Elle emploie 1,5 million de personnes !",
            [
                "M. Dupont habite à Lyon depuis vingt ans.",
                "Il travaille avec Mme Martin.",
                "Connaissez-vous leur entreprise ?",
                "Elle emploie 1,5 million de personnes !",
            ],
        ),
        (
            "Le XIXe siècle a vu naître le chemin de fer. Les premières lignes reliaient les "
            "mines aux ports, etc. Ensuite vinrent les lignes de voyageurs.",
            [
                "Le XIXe siècle a vu naître le chemin de fer.",
                "Les premières lignes reliaient les mines aux ports, etc.",
                "Ensuite vinrent les lignes de voyageurs.",
            ],
        ),
        (
            "Les résultats sont détaillés p. 12 du rapport. Le Dr Martin les a présentés hier.",
            [
                "Les résultats sont détaillés p. 12 du rapport.",
                "Le Dr Martin les a présentés hier.",
            ],
        ),
    ],
    "hi": [
        (
            "एफिल टावर पेरिस में स्थित है। इसका निर्माण 1889 में हुआ था। इसकी ऊँचाई 330 मीटर है।",
            ["एफिल टावर पेरिस में स्थित है।", "इसका निर्माण 1889 में हुआ था।", "इसकी ऊँचाई 330 मीटर है।"],
        ),
        (
            "भारत की राजधानी नई दिल्ली है। क्या आप कभी वहाँ गए हैं? यह शहर बहुत सुंदर है! यहाँ की "
            "आबादी लगभग 3.2 करोड़ है।",
            [
                "भारत की राजधानी नई दिल्ली है।",
                "क्या आप कभी वहाँ गए हैं?",
                "यह शहर बहुत सुंदर है!",
                "यहाँ की आबादी लगभग 3.2 करोड़ है।",
            ],
        ),
        (
            "गंगा भारत की सबसे लंबी नदी है। यह हिमालय से निकलती है और बंगाल की खाड़ी में गिरती है।",
            ["गंगा भारत की सबसे लंबी नदी है।", "यह हिमालय से निकलती है और बंगाल की खाड़ी में गिरती है।"],
        ),
        (
            "डॉ. शर्मा दिल्ली में रहते हैं। वे एक अस्पताल में काम करते हैं।",
            ["डॉ. शर्मा दिल्ली में रहते हैं।", "वे एक अस्पताल में काम करते हैं।"],
        ),
    ],
    "ja": [
        (
            "エッフェル塔はパリにあります。1889年の万国博覧会のために建てられました。高さは330メートルです。",
            [
                "エッフェル塔はパリにあります。",
                "1889年の万国博覧会のために建てられました。",
                "高さは330メートルです。",
            ],
        ),
        (
            "東京は日本の首都です。人口は約1400万人です！行ったことがありますか？",
            ["東京は日本の首都です。", "人口は約1400万人です！", "行ったことがありますか？"],
        ),
        (
            "富士山は日本で一番高い山です。標高は3776メートルです。夏には多くの人が登ります。",
            [
                "富士山は日本で一番高い山です。",
                "標高は3776メートルです。",
                "夏には多くの人が登ります。",
            ],
        ),
        (
            "彼は「明日また来ます。」と言いました。それから家に帰りました。",
            ["彼は「明日また来ます。」と言いました。", "それから家に帰りました。"],
        ),
    ],
    "zh": [
        (
            "埃菲尔铁塔位于巴黎。它是为1889年世界博览会而建造的。塔高330米。",
            ["埃菲尔铁塔位于巴黎。", "它是为1889年世界博览会而建造的。", "塔高330米。"],
        ),
        (
            "北京是中国的首都，人口约2100万。你去过北京吗？那里的烤鸭非常有名！",
            ["北京是中国的首都，人口约2100万。", "你去过北京吗？", "那里的烤鸭非常有名！"],
        ),
        (
            "长江是中国最长的河流。它全长约6300公里。长江流经十一个省级行政区。",
            ["长江是中国最长的河流。", "它全长约6300公里。", "长江流经十一个省级行政区。"],
        ),
        (
            "他说：“我明天再来。”然后他就走了。",
            ["他说：“我明天再来。”", "然后他就走了。"],
        ),
    ],
}

CASES = [
    (language, text, expected) for language, cases in SPLITS.items() for text, expected in cases
]


def test_the_hand_split_set_has_forty_sentences_or_more_in_six_languages():
    assert set(SPLITS) == {"de", "es", "fr", "hi", "ja", "zh"} <= SENTENCE_RULES
    assert sum(len(expected) for _, _, expected in CASES) >= 40
    assert all(sum(len(e) for _, e in SPLITS[language]) >= 6 for language in SPLITS)


@pytest.mark.parametrize(("language", "text", "expected"), CASES)
def test_each_text_splits_exactly_as_written_by_hand(language, text, expected):
    assert split_sentences(text, language) == expected
    assert sentence_rule(language, text) is None  # the language's own rules


def test_english_rules_split_the_german_date_where_german_rules_do_not():
    # What went wrong before: "31." read as the end of a sentence.
    assert split_sentences(EIFFEL_DE) == [
        "Der Eiffelturm steht in Paris.",
        "Er wurde zur Weltausstellung 1889 errichtet und am 31.",
        "März 1889 eingeweiht.",
        "Er ist 330 Meter hoch.",
    ]
    assert len(split_sentences(EIFFEL_DE, "de")) == 3


def sample_in(language: str, **fields) -> Sample:
    """A sample whose answer is the language's first text and whose context is its second."""
    (answer, _), (context, _), *_ = SPLITS[language]
    return Sample(question="?", contexts=[context], answer=answer, **fields)


@pytest.mark.parametrize("language", sorted(SPLITS))
def test_a_sample_in_each_language_is_detected_right(language):
    sample = sample_in(language)
    assert language_of(sample) == language
    assert detect_language([sample.answer, *sample.contexts]) == language


def test_a_given_language_overrides_detection():
    german = sample_in("de")
    assert language_of(german) == "de"
    told = german.model_copy(update={"metadata": {"language": "en"}})
    assert language_of(told) == "en"
    assert language_of(german.model_copy(update={"metadata": {"language": "auto"}})) == "de"
    assert language_of(german.model_copy(update={"metadata": {"language": "de-AT"}})) == "de"
    # A data file's "language" column is the sample's.
    row = {"question": "?", "contexts": german.contexts, "answer": german.answer, "language": "it"}
    (loaded,) = load_samples([row]).samples
    assert loaded.metadata == {"language": "it"} and language_of(loaded) == "it"


def test_language_codes_are_read_and_anything_else_refused():
    assert [language_code(v) for v in ("de", "DE", "pt-BR", "zh_Hans", "fil")] == [
        "de",
        "de",
        "pt",
        "zh",
        "fil",
    ]
    for wrong in ("German", "", "d", 7):
        with pytest.raises(ValueError, match="not a language code"):
            language_code(wrong)


def test_too_little_text_or_an_unknown_script_is_undetermined_and_said_so():
    assert detect_language(["Keflavik International Airport (KEF)"]) == "und"  # 32 letters
    # Santali in Ol Chiki: a script no language of the detector is written in (which would
    # otherwise call it Amharic).
    santali = (
        "ᱥᱟᱱᱛᱟᱲᱤ ᱯᱟᱹᱨᱥᱤ ᱫᱚ ᱥᱟᱱᱛᱟᱲ ᱦᱚᱲ ᱨᱮᱱᱟᱜ ᱯᱟᱹᱨᱥᱤ ᱠᱟᱱᱟ᱾ ᱱᱚᱶᱟ ᱫᱚ ᱵᱷᱟᱨᱚᱛ ᱨᱮ ᱡᱟᱹᱥᱛᱤ ᱥᱮᱨᱢᱟ ᱨᱚᱲᱟ ᱠᱟᱱᱟ᱾"
    )
    assert detect_language([santali]) == "und"
    assert split_sentences(santali, "und") == [
        "ᱥᱟᱱᱛᱟᱲᱤ ᱯᱟᱹᱨᱥᱤ ᱫᱚ ᱥᱟᱱᱛᱟᱲ ᱦᱚᱲ ᱨᱮᱱᱟᱜ ᱯᱟᱹᱨᱥᱤ ᱠᱟᱱᱟ᱾",
        "ᱱᱚᱶᱟ ᱫᱚ ᱵᱷᱟᱨᱚᱛ ᱨᱮ ᱡᱟᱹᱥᱛᱤ ᱥᱮᱨᱢᱟ ᱨᱚᱲᱟ ᱠᱟᱱᱟ᱾",
    ]
    assert sentence_rule("und", santali) == (
        "no language is known in the OL CHIKI script: split at sentence-final punctuation"
    )
    assert sentence_rule("und", "Yes.") == "language not determined: split by English rules"


KOREAN = "에펠탑은 파리에 있습니다. 1889년 만국박람회를 위해 지어졌습니다! 높이는 약 330미터입니다."
THAI = "หอไอเฟลตั้งอยู่ในกรุงปารีส สร้างขึ้นในปี 1889 สำหรับงานนิทรรศการโลก"


def test_a_language_pysbd_lacks_is_split_at_sentence_final_punctuation_and_said_so():
    assert set(LANGUAGE_CODES) == SENTENCE_RULES  # pysbd's own list
    assert {"ko", "th", "pt"}.isdisjoint(SENTENCE_RULES)
    assert detect_language([KOREAN]) == "ko"
    assert split_sentences(KOREAN, "ko") == [
        "에펠탑은 파리에 있습니다.",
        "1889년 만국박람회를 위해 지어졌습니다!",
        "높이는 약 330미터입니다.",
    ]
    assert sentence_rule("ko") == "no sentence rules for ko: split at sentence-final punctuation"
    # Thai ends no sentence with punctuation: the rule keeps the line whole, and says so.
    assert detect_language([THAI]) == "th"
    assert split_sentences(THAI, "th") == [THAI]
    assert sentence_rule("th") == "no sentence rules for th: split at sentence-final punctuation"


def needed(*probabilities: float) -> FakeJudge:
    return FakeJudge([yes_no(p) for p in probabilities])


def test_context_relevance_reads_the_german_context_as_three_sentences():
    sample = Sample(
        question="Wann wurde der Eiffelturm eingeweiht?",
        contexts=[EIFFEL_DE],
        answer="Der Eiffelturm wurde am 31. März 1889 eingeweiht.",
    )
    judge = needed(0.1, 0.9, 0.1)
    score = ContextRelevance().score(sample, JudgeSession(judge))
    assert len(judge.history) == 3
    assert score.value == pytest.approx(1 / 3)
    assert score.explanation["extracted_sentences"] == [
        "Er wurde zur Weltausstellung 1889 errichtet und am 31. März 1889 eingeweiht."
    ]
    assert score.explanation["context_sentences"] == 3
    assert score.explanation["language"] == "de" and "sentence_rule" not in score.explanation


def test_a_score_says_which_rule_split_a_language_without_rules():
    sample = Sample(question="?", contexts=[KOREAN], answer=KOREAN)
    score = Faithfulness().score(sample, JudgeSession(needed(0.9, 0.9, 0.9)))
    assert [s["statement"] for s in score.explanation["statements"]] == split_sentences(
        KOREAN, "ko"
    )
    assert score.explanation["language"] == "ko"
    assert score.explanation["sentence_rule"] == (
        "no sentence rules for ko: split at sentence-final punctuation"
    )


# English texts from the other tests, with the splits the English rules gave before languages
# were told apart (quirks included: "ca." ends a sentence), which must not move.
ENGLISH = [
    (LONG_CONTEXT["tower"], 8),
    (LONG_CONTEXT["penicillin"], 8),
    (
        "Paris is the capital of France. It has 9 million inhabitants. It is in Europe.",
        ["Paris is the capital of France.", "It has 9 million inhabitants.", "It is in Europe."],
    ),
    (
        "Dr. Smith moved to the U.S. in 1998. He earned ca. 3.5 million dollars, e.g. from "
        "patents. Mr. Jones, his partner, left at 5 p.m. on Jan. 3. Was it worth it? Yes!",
        [
            "Dr. Smith moved to the U.S. in 1998.",
            "He earned ca.",
            "3.5 million dollars, e.g. from patents.",
            "Mr. Jones, his partner, left at 5 p.m. on Jan. 3.",
            "Was it worth it?",
            "Yes!",
        ],
    ),
]


@pytest.mark.parametrize(("text", "expected"), ENGLISH)
def test_english_text_splits_as_before(text, expected):
    if isinstance(expected, int):  # the selftest's contexts: one sentence per ". "
        expected = [s if s.endswith(".") else s + "." for s in text.split(". ")]
        assert len(expected) == 8
    language = detect_language([text])
    assert language == "en"
    assert split_sentences(text) == split_sentences(text, language) == expected


def test_english_keys_stay_and_other_languages_join_the_key():
    judge = FakeJudge()
    keys = ItemKeys(ContextRelevance(), judge, None)
    english = Sample(id="e", question="?", contexts=[LONG_CONTEXT["tower"]], answer="It is tall.")
    # The key as it was made before languages were told apart.
    before = [
        "e",
        english.digest,
        "context_relevance",
        ContextRelevance().version,
        [identity_of(judge).digest, ""],
    ]
    assert keyed_language(english) is None
    assert (
        keys.key(english) == hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()
    )
    told_english = english.model_copy(update={"metadata": {"language": "en"}})
    assert keys.key(told_english) == keys.key(english)
    german = sample_in("de", id="g")
    assert keyed_language(german) == "de"
    as_english = german.model_copy(update={"metadata": {"language": "en"}})
    assert keys.key(german) != keys.key(as_english)


def test_the_run_record_counts_the_languages_and_old_records_still_read(tmp_path):
    samples = [
        sample_in("de", id="de1"),
        Sample(id="de2", question="?", contexts=[SPLITS["de"][3][0]], answer=SPLITS["de"][2][0]),
        Sample(id="en", question="?", contexts=[LONG_CONTEXT["tower"]], answer="It is tall."),
        sample_in("fr", id="told", metadata={"language": "it"}),
    ]
    judge = FakeJudge(responder=routed({"needed": 0.25}))
    result = evaluate(samples, ["context_relevance"], judge=judge, cache=False, out_dir=tmp_path)
    assert result.run.languages == {"de": 2, "en": 1, "it": 1}
    record = RunRecord.read(tmp_path)
    assert record.languages == {"de": 2, "en": 1, "it": 1}
    assert record.parameters["language"] is None
    assert [s.explanation["language"] for s in result.scores] == ["de", "de", "en", "it"]
    # A record written before languages were counted has no such field, and reads.
    written = json.loads((tmp_path / RUN_FILE).read_text())
    del written["languages"], written["parameters"]["language"]
    (tmp_path / RUN_FILE).write_text(json.dumps(written))
    assert RunRecord.read(tmp_path).languages is None


def test_a_run_language_applies_to_the_samples_that_give_none(tmp_path):
    german = Sample(id="de", question="?", contexts=[EIFFEL_DE], answer=SPLITS["de"][1][0])
    samples = [german, sample_in("es", id="es", metadata={"language": "es"})]
    judge = FakeJudge(responder=routed({"needed": 0.25}))
    result = evaluate(samples, ["context_relevance"], judge=judge, cache=False, language="en")
    assert result.run.languages == {"en": 1, "es": 1}
    assert result.run.parameters["language"] == "en"
    german, spanish = result.scores
    # Told English, the German context is split by English rules: after "31." too.
    assert german.explanation["language"] == "en" and german.explanation["context_sentences"] == 4
    assert spanish.explanation["language"] == "es" and spanish.explanation["context_sentences"] == 3
    with pytest.raises(ValueError, match="not a language code"):
        evaluate(samples, ["context_relevance"], judge=judge, cache=False, language="German")
    wrong = [sample_in("de", id="x", metadata={"language": "Deutsch"})]
    with pytest.raises(ValueError, match=r"row 1 \(x\): language 'Deutsch' is not a language"):
        evaluate(wrong, ["context_relevance"], judge=judge, cache=False)


def test_a_test_set_chunks_a_german_document_between_its_own_sentences():
    # Chunks of at most 80 characters: one sentence each, the second (77 characters) whole,
    # where English rules would cut it after "31.".
    chunks = chunk_document(Document("eiffel.md", EIFFEL_DE), max_chars=80, min_chars=10)
    assert [chunk.text for chunk in chunks] == SPLITS["de"][0][1]
    assert all(EIFFEL_DE[c.start : c.end] == c.text for c in chunks)


# --- what the judge writes ------------------------------------------------------------------------


def test_statements_and_questions_are_asked_for_in_the_samples_language():
    german = Sample(
        question="Wann wurde der Turm eingeweiht?",
        contexts=["Der Eiffelturm wurde am 31. März 1889 eingeweiht."],
        answer="Der Turm wurde am 31. März 1889 eingeweiht. Er steht in Paris.",
        metadata={"language": "de"},
    )
    english = german.model_copy(
        update={"answer": "The tower opened on 31 March 1889.", "metadata": {"language": "en"}}
    )
    replies = {
        "statements": {"statements": ["Der Turm wurde 1889 eingeweiht."]},
        "supported": 0.9,
        "questions": {"questions": ["Wann?", "Wann?", "Wann?"], "noncommittal": False},
    }
    asked = {}
    for sample in (german, english):
        judge = FakeJudge(responder=routed(replies))
        Faithfulness(statements="generate").score(sample, JudgeSession(judge))
        AnswerRelevance(score="similarity", off_topic_below=None).score(
            sample, JudgeSession(judge, HashingEmbedder())
        )
        asked[sample.metadata["language"]] = [r.messages[0].content for r in judge.history]
    statements, _, questions = asked["de"]
    ask = "Write everything you write in German, the language of the data."
    assert ask in statements and ask in questions
    # English prompts are as they were: their cached calls and stored scores stay valid.
    assert not any("Write everything you write in" in m for m in asked["en"])
    assert STATEMENTS.in_language("en") is STATEMENTS
    assert STATEMENTS.in_language("und") is STATEMENTS
    assert "the language whose ISO 639-1 code is 'sw'" in STATEMENTS.in_language("sw").instruction

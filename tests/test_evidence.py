"""Evidence within a token budget: the sentences most related to a claim, in their order."""

import pytest

from ragmeter.evidence import GAP, relatedness, select_evidence, utf8_tokens


def words(text: str) -> int:
    return len(text.split())


def test_relatedness_is_the_cosine_of_shared_trigrams():
    # " abc " has the trigrams " ab", "abc", "bc ": all shared with itself, none with "xyz".
    assert relatedness("abc", ["abc", "xyz"]) == pytest.approx([1.0, 0.0])
    # The same in Devanagari: no tokenizer or word list is needed.
    assert relatedness("पेरिस", ["पेरिस", "लंदन"]) == pytest.approx([1.0, 0.0])


def test_passages_that_fit_are_shown_whole():
    evidence = select_evidence("c", ["one two.", "three."], budget=3, count=words)
    assert evidence.text == "one two.\n\nthree."
    assert evidence.left_out is None


def test_the_most_related_sentences_are_kept_in_their_order():
    passages = ["The tower is in Paris. It opened in 1889.", "Bananas are yellow. Apples are red."]
    # 15 words in all. Costs (words + 1): 6, 5, 4, 4. "It opened in 1889." shares most with
    # the claim (5), "The tower is in Paris." next but 5 + 6 > 10; "Bananas are yellow." and
    # "Apples are red." share nothing, the earlier first: 5 + 4 = 9, and the next 4 no longer fit.
    evidence = select_evidence("The tower opened in 1889.", passages, budget=10, count=words)
    assert evidence.text == "It opened in 1889.\n\nBananas are yellow."
    assert evidence.left_out == {
        "sentences": 2,
        "of_sentences": 4,
        "tokens": 6,
        "of_tokens": 15,
        "passages": 0,
    }


def test_a_gap_marks_sentences_left_out_between_kept_ones():
    passages = ["Paris is big. Rain fell. Snow fell. Paris is old."]
    evidence = select_evidence("Paris is", passages, budget=8, count=words)
    assert evidence.text == f"Paris is big. {GAP} Paris is old."
    assert evidence.left_out["sentences"] == 2


def test_a_passage_with_nothing_kept_is_left_out_and_counted():
    # 9 words in all; costs 5 and 6: the second no longer fits beside the first.
    passages = ["Mars has two moons.", "Bread needs yeast and flour."]
    evidence = select_evidence("Mars moons", passages, budget=8, count=words)
    assert evidence.text == "Mars has two moons."
    assert evidence.left_out["passages"] == 1


def test_a_sentence_longer_than_the_budget_is_shown_in_part():
    evidence = select_evidence("x", ["x" * 40], budget=4, count=len)
    # Over the budget: cut into pieces of 40 * 4 // (4 * 40) = 1 character, costing 2; two
    # fit, shown together as the sentence's opening.
    assert evidence.text == "xx"
    assert evidence.left_out["tokens"] == 36


def test_utf8_tokens_counts_three_bytes_a_token():
    assert utf8_tokens("abcdef") == 2
    assert utf8_tokens("पेरिस") == 5  # 5 code points of 3 bytes each


def test_what_the_question_shares_comes_first_then_what_the_claim_needs():
    passages = ["Mars has two moons. Bread needs yeast. Phobos is the larger moon. Rain fell."]
    # 14 words; costs 5, 4, 6, 3. A budget of 12: three quarters (9) for what relates to the
    # question: "Mars has two moons." (5); "Phobos is the larger moon." (shares "moo") would make
    # 11; the other two share no trigram with it. Then up to 12 for the claim: "Phobos ..." (6)
    # makes 11, and neither of the others fits beside it.
    evidence = select_evidence(
        "Phobos is larger.", passages, budget=12, count=words, shared_by="How many moons has Mars?"
    )
    assert evidence.text == f"Mars has two moons.\n\n{GAP} Phobos is the larger moon."
    assert evidence.left_out["tokens"] == 14 - 11

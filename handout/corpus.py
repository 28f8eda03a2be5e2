"""
A small synthetic language for training and judging a character-level GPT, plus the
character tokenizer and a text loader. Standard library and NumPy only: no download.

The language ("farmyard") has three sentence shapes, and the main verb always agrees in
number with the FIRST noun, however far away it is and whatever noun stands in between:

    the dog runs.                        the dogs run.
    the dog near the cats runs.          the dogs behind the cat run.
    the dogs that the cat sees run.      the dog that the cats hear naps.

An n-gram model that sees only the last few characters cannot know whether "run" needs an
"s" after "the dog near the cats"; a transformer can look back to the subject. Every
sentence has exactly one derivation, so its probability, and the entropy of the whole
character stream, are known exactly (`sentence_logprob`, `entropy_per_char`): a trained
model's validation loss can be compared with the best loss any model can reach.

Text is sentences joined by SEPARATOR ("\\n"), each sentence ending in "." (see
`generate_text`); the alphabet is lowercase letters, space, "." and "\\n".
"""

import math
import random

import numpy as np

SEPARATOR = "\n"

# The lexicon. Plural nouns and singular (third person) verbs add "s"; no word of one list
# is another word plus "s", so every sentence parses one way only.
NOUNS = ("ant", "bee", "cat", "dog", "elk", "hen", "owl", "pig")
VERBS = ("dig", "eat", "hop", "hum", "nap", "run", "sit", "swim")  # intransitive: main verb
TRANSITIVE_VERBS = ("feed", "hear", "like", "see")  # inside the relative clause
PREPOSITIONS = ("behind", "near", "under", "with")
# How a sentence continues after its subject, and how often.
SHAPES = (("simple", 0.2), ("preposition", 0.4), ("relative", 0.4))
P_PLURAL = 0.5  # each noun is plural with this probability, independently


# ----------------------------------------------------------------------------- generating

def _pick(rng, items):
    """A uniform choice drawn with rng.random() only, which Python keeps reproducible."""
    return items[min(int(rng.random() * len(items)), len(items) - 1)]


def _noun(rng):
    """(word, plural) for one noun phrase's noun."""
    plural = rng.random() < P_PLURAL
    stem = _pick(rng, NOUNS)
    return (stem + "s" if plural else stem), plural


def _verb(stem, plural):
    """The verb form agreeing with a subject: singular subjects take "s"."""
    return stem if plural else stem + "s"


def _sentence(rng):
    u = rng.random()
    cumulative = 0.0
    shape = SHAPES[-1][0]
    for name, p in SHAPES:
        cumulative += p
        if u < cumulative:
            shape = name
            break
    subject, plural = _noun(rng)
    words = ["the", subject]
    if shape == "preposition":
        other, _ = _noun(rng)
        words += [_pick(rng, PREPOSITIONS), "the", other]
    elif shape == "relative":
        other, other_plural = _noun(rng)
        words += ["that", "the", other, _verb(_pick(rng, TRANSITIVE_VERBS), other_plural)]
    words.append(_verb(_pick(rng, VERBS), plural))
    return " ".join(words) + "."


def generate_sentences(n, seed):
    """n sentences of the language (strings ending in "."), the same for the same seed."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(int(seed))
    return [_sentence(rng) for _ in range(n)]


def generate_text(n_sentences, seed):
    """n_sentences sentences, each followed by SEPARATOR: "the dog runs.\\nthe ...\\n"."""
    return "".join(s + SEPARATOR for s in generate_sentences(n_sentences, seed))


def split_sentences(text):
    """Cut text (which starts at the beginning of a sentence) into the complete sentences
    it holds: the pieces between separators. A last piece not followed by a separator is
    unfinished and dropped; empty pieces (two separators in a row) are kept, as "", so a
    judge counts them as mistakes."""
    pieces = text.split(SEPARATOR)
    return pieces[:-1]  # the piece after the last separator is unfinished (or "")


# ----------------------------------------------------------------------------- judging

def _noun_logprob(word):
    """(log probability, plural) of a noun word, or (-inf, None) if it is not one."""
    if word in NOUNS:
        return math.log(1 - P_PLURAL) - math.log(len(NOUNS)), False
    if word.endswith("s") and word[:-1] in NOUNS:
        return math.log(P_PLURAL) - math.log(len(NOUNS)), True
    return -math.inf, None


def _verb_logprob(word, stems, plural):
    """log probability of `word` as the form of one of `stems` agreeing with `plural`."""
    stem = word if plural else word[:-1]
    if stem in stems and word == _verb(stem, plural):
        return -math.log(len(stems))
    return -math.inf


def sentence_logprob(s):
    """The exact natural-log probability that `generate_sentences` produces sentence s
    (without the separator); -inf if s is not in the language."""
    if not isinstance(s, str) or not s.endswith(".") or s.count(".") != 1:
        return -math.inf
    words = s[:-1].split(" ")  # "".split(" ") keeps empty words, which fail below
    shape_p = dict(SHAPES)
    if len(words) < 3 or words[0] != "the":
        return -math.inf
    lp, plural = _noun_logprob(words[1])
    if plural is None:
        return -math.inf
    rest = words[2:]
    if len(rest) == 1:
        lp += math.log(shape_p["simple"])
    elif len(rest) == 4 and rest[0] in PREPOSITIONS and rest[1] == "the":
        other_lp, other_plural = _noun_logprob(rest[2])
        if other_plural is None:
            return -math.inf
        lp += math.log(shape_p["preposition"]) - math.log(len(PREPOSITIONS)) + other_lp
    elif len(rest) == 5 and rest[0] == "that" and rest[1] == "the":
        other_lp, other_plural = _noun_logprob(rest[2])
        if other_plural is None:
            return -math.inf
        lp += (math.log(shape_p["relative"]) + other_lp
               + _verb_logprob(rest[3], TRANSITIVE_VERBS, other_plural))
    else:
        return -math.inf
    return lp + _verb_logprob(rest[-1], VERBS, plural)


def is_sentence(s):
    """True if s (without the separator) is a sentence of the language."""
    return sentence_logprob(s) > -math.inf


def enumerate_sentences():
    """Every sentence of the language with its log probability (about 16,500 pairs); the
    probabilities sum to 1. Used to check `entropy_per_char` and by exact oracles."""
    shape_p = dict(SHAPES)
    nouns = [(w, math.log(1 - P_PLURAL) - math.log(len(NOUNS)), False) for w in NOUNS]
    nouns += [(w + "s", math.log(P_PLURAL) - math.log(len(NOUNS)), True) for w in NOUNS]
    out = []
    for subject, s_lp, plural in nouns:
        endings = [([], math.log(shape_p["simple"]))]
        for prep in PREPOSITIONS:
            for other, o_lp, _ in nouns:
                endings.append(([prep, "the", other], math.log(shape_p["preposition"])
                                - math.log(len(PREPOSITIONS)) + o_lp))
        for other, o_lp, o_plural in nouns:
            for tv in TRANSITIVE_VERBS:
                endings.append((["that", "the", other, _verb(tv, o_plural)],
                                math.log(shape_p["relative"]) + o_lp
                                - math.log(len(TRANSITIVE_VERBS))))
        for middle, m_lp in endings:
            for v in VERBS:
                words = ["the", subject] + middle + [_verb(v, plural)]
                out.append((" ".join(words) + ".", s_lp + m_lp - math.log(len(VERBS))))
    return out


def _entropy(probs):
    return -sum(p * math.log(p) for p in probs if p > 0)


def _mean_len(words):
    return sum(len(w) for w in words) / len(words)


def entropy_per_char():
    """The exact entropy rate of the character stream of `generate_text`, in nats/char:
    the loss (mean cross-entropy per character) of a perfect model.

    Derivation. Sentences are drawn independently, so the stream's entropy rate is
    H(sentence) / E[characters per sentence, separator included] (a renewal process:
    n sentences carry n*H nats in about n*E[L] characters). Each sentence has exactly one
    derivation, so H(sentence) is the entropy of the sequence of independent choices that
    make it:
        H = H(shape) + H(noun) + H(verb)
            + p_prep * (H(preposition) + H(noun)) + p_rel * (H(noun) + H(transitive verb))
    with H(noun) = H(plural) + log |NOUNS| and H(verb) = log |VERBS| (the verb's number is
    fixed by its subject, so it adds nothing). Lengths add up the same way:
        E[L] = len("the ") + E|noun| + 1 + E|verb| + len(".\\n")
               + p_prep * (E|prep| + 1 + len("the ") + E|noun| + 1)
               + p_rel * (len("that the ") + E|noun| + 1 + E|tverb| + 1)
    where E|noun| = mean stem length + P_PLURAL, E|verb| = mean stem length + (1 - P_PLURAL)
    (a verb gets "s" when its subject is singular), the same for transitive verbs.
    `enumerate_sentences` checks both sums by brute force.
    """
    p = dict(SHAPES)
    h_noun = _entropy([P_PLURAL, 1 - P_PLURAL]) + math.log(len(NOUNS))
    h = (_entropy(p.values()) + h_noun + math.log(len(VERBS))
         + p["preposition"] * (math.log(len(PREPOSITIONS)) + h_noun)
         + p["relative"] * (h_noun + math.log(len(TRANSITIVE_VERBS))))
    noun_len = _mean_len(NOUNS) + P_PLURAL
    verb_len = _mean_len(VERBS) + (1 - P_PLURAL)
    tverb_len = _mean_len(TRANSITIVE_VERBS) + (1 - P_PLURAL)
    length = (len("the ") + noun_len + 1 + verb_len + len("." + SEPARATOR)
              + p["preposition"] * (_mean_len(PREPOSITIONS) + 1 + len("the ") + noun_len + 1)
              + p["relative"] * (len("that the ") + noun_len + 1 + tverb_len + 1))
    return h / length


_PREFIX_MASS = {}  # prefix of "sentence\n" -> total probability of sentences starting so


def oracle_char_nll(text):
    """Per-character negative log-likelihood (nats) of text under the true generator, the
    best any model can do: -log P(char | the characters of its sentence before it).
    text must start at the beginning of a sentence; returns a float64 array (len(text),),
    inf where a character makes the text leave the language. Its mean over a validation
    window is that window's loss floor (entropy_per_char is the floor's long-run average).
    """
    if not _PREFIX_MASS:
        for s, lp in enumerate_sentences():
            full = s + SEPARATOR
            p = math.exp(lp)
            for i in range(len(full) + 1):
                _PREFIX_MASS[full[:i]] = _PREFIX_MASS.get(full[:i], 0.0) + p
    out = np.empty(len(text))
    start = 0  # where the current sentence began
    for i, c in enumerate(text):
        before = _PREFIX_MASS.get(text[start:i], 0.0)
        after = _PREFIX_MASS.get(text[start:i + 1], 0.0)
        out[i] = math.log(before) - math.log(after) if after > 0 else math.inf
        if c == SEPARATOR:
            start = i + 1
    return out


# ----------------------------------------------------------------------------- tokens

class CharTokenizer:
    """Maps characters to token ids 0 .. vocab_size - 1 and back, in sorted order."""

    def __init__(self, chars):
        chars = sorted(set(chars))
        if not chars:
            raise ValueError("a tokenizer needs at least one character")
        self.chars = chars
        self.stoi = {c: i for i, c in enumerate(chars)}
        self.itos = dict(enumerate(chars))

    @classmethod
    def from_text(cls, text):
        """A tokenizer for every character that occurs in text."""
        return cls(text)

    @classmethod
    def for_language(cls):
        """A tokenizer for the synthetic language's fixed alphabet."""
        words = NOUNS + VERBS + TRANSITIVE_VERBS + PREPOSITIONS + ("the", "that", "s")
        return cls("".join(words) + " ." + SEPARATOR)

    @property
    def vocab_size(self):
        return len(self.chars)

    def encode(self, s):
        """str -> list of ids; ValueError naming the first unknown character."""
        try:
            return [self.stoi[c] for c in s]
        except KeyError:
            pos = next(i for i, c in enumerate(s) if c not in self.stoi)
            raise ValueError(
                f"character {s[pos]!r} at position {pos} is not in the vocabulary "
                f"({self.vocab_size} characters)"
            ) from None

    def decode(self, ids):
        """list (or array) of ids -> str; ValueError for an id out of range."""
        out = []
        for pos, i in enumerate(ids):
            i = int(i)
            if i not in self.itos:
                raise ValueError(f"token id {i} at position {pos} is not in "
                                 f"0..{self.vocab_size - 1}")
            out.append(self.itos[i])
        return "".join(out)


def load_text(path):
    """The contents of a UTF-8 text file, as str; ValueError if it is empty or not UTF-8."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text: byte 0x{data[e.start]:02x} at "
                         f"offset {e.start} cannot be decoded ({e.reason})") from None
    if text.startswith("\ufeff"):  # a byte-order mark is not part of the text
        text = text[1:]
    if not text:
        raise ValueError(f"{path} is empty: there is nothing to train on")
    return text


def sentence_windows(ids, n, length, seed, separator_id):
    """n windows of `length` consecutive ids from the 1-D array `ids`, each starting at a
    separator, so that every prediction after the first token sees its sentence from the
    start. Returns an int64 array (n, length), the same for the same seed."""
    ids = np.asarray(ids, dtype=np.int64)
    starts = np.flatnonzero(ids[: len(ids) - length + 1] == separator_id)
    if len(starts) == 0:
        raise ValueError(f"no separator with {length} ids after it in {len(ids)} ids")
    rng = np.random.default_rng(seed)
    chosen = starts[rng.integers(0, len(starts), size=n)]
    return np.stack([ids[s:s + length] for s in chosen])

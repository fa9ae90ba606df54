"""The problems of `specexp_code` (`code_task`): 41 self-contained Python functions from
templated families with varied parameters (sums of multiples, FizzBuzz variants, Caesar shifts,
run-length encoding, gcd, ...), each with a reference solution and the argument lists its tests
call it with. Fixed data, so the task is the same on every machine and in every run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    entry_point: str
    signature: str
    """Parameters and return type, after the name: `(s: str) -> bool`."""
    description: str
    """What it returns, a clause completing "that ..."."""
    body: str
    """The reference solution's body (4-space indented lines)."""
    calls: tuple[str, ...]
    """Argument lists of the tests, as source; the first is the prompt's worked call."""

    @property
    def reference(self) -> str:
        return f"def {self.entry_point}{self.signature}:\n{self.body}\n"


def _p(name: str, sig: str, desc: str, body: str, *calls: str) -> Problem:
    lines = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return Problem(name, sig, desc, lines, calls)


def _families() -> list[list[Problem]]:
    """The problems by family; each family's variants differ in their parameters."""
    multiples = [
        _p(
            f"sum_multiples_of_{a}_or_{b}",
            "(limit: int) -> int",
            f"returns the sum of all positive integers below `limit` that are multiples of {a} "
            f"or {b}",
            f"return sum(i for i in range(1, limit) if i % {a} == 0 or i % {b} == 0)",
            *("10", "1", "20", "100"),
        )
        for a, b in ((3, 5), (2, 7), (4, 6), (5, 9))
    ]
    fizz = [
        _p(
            f"fizzbuzz_{w1.lower()}_{w2.lower()}",
            "(n: int) -> list[str]",
            f"returns a list with one string for each number from 1 to `n`: {w1 + w2!r} for "
            f"multiples of both {a} and {b}, {w1!r} for other multiples of {a}, {w2!r} for other "
            f"multiples of {b}, and the number itself as a string otherwise",
            f"""
out = []
for i in range(1, n + 1):
    word = ({w1!r} if i % {a} == 0 else "") + ({w2!r} if i % {b} == 0 else "")
    out.append(word or str(i))
return out""",
            *(str(a * b), "1", str(a * b + 3)),
        )
        for a, b, w1, w2 in ((3, 5, "Fizz", "Buzz"), (2, 7, "Foo", "Bar"), (4, 6, "Ping", "Pong"))
    ]
    counts = [
        _p(
            f"count_{what}",
            "(s: str) -> int",
            f"returns how many {words} the string `s` contains",
            f"return sum(1 for c in s if {test})",
            *(repr(example), "''", "'Hello World 2024'", "'AEIOU aeiou XYZ 123'"),
        )
        for what, words, test, example in (
            ("vowels", "vowels (a, e, i, o, u, in upper or lower case)", "c in 'aeiouAEIOU'", "Programming"),
            ("digits", "decimal digits (0-9)", "c in '0123456789'", "a1b22c333"),
            ("uppercase", "uppercase letters (A-Z)", "'A' <= c <= 'Z'", "Hello World"),
        )
    ]  # fmt: skip
    caesar = [
        _p(
            f"caesar_shift_{k}",
            "(s: str) -> str",
            f"returns `s` with every letter shifted {k} place{'s' * (k > 1)} forward in the "
            "alphabet, wrapping around from z to a and keeping its case, and every other "
            "character unchanged",
            f"""
out = []
for c in s:
    if c.islower():
        out.append(chr((ord(c) - 97 + {k}) % 26 + 97))
    elif c.isupper():
        out.append(chr((ord(c) - 65 + {k}) % 26 + 65))
    else:
        out.append(c)
return ''.join(out)""",
            *("'abc'", "'xyz'", "'Hello, World!'", "''"),
        )
        for k in (1, 3, 13)
    ]
    palindromes = [
        _p(
            "is_palindrome",
            "(s: str) -> bool",
            "returns True when `s` reads the same forwards and backwards once everything but "
            "letters and digits is removed and case is ignored, else False",
            "t = [c.lower() for c in s if c.isalnum()]\nreturn t == t[::-1]",
            *("'A man, a plan, a canal: Panama'", "'racecar'", "'hello'", "''", "'ab'"),
        ),
        _p(
            "is_palindrome_number",
            "(n: int) -> bool",
            "returns True when the decimal digits of the non-negative integer `n` read the same "
            "forwards and backwards, else False",
            "return str(n) == str(n)[::-1]",
            *("121", "123", "0", "1221", "10"),
        ),
    ]
    words = [
        _p(
            "reverse_words",
            "(s: str) -> str",
            "returns the words of `s` (separated by whitespace) in reverse order, joined by "
            "single spaces",
            "return ' '.join(reversed(s.split()))",
            *("'hello world'", "'  one two   three '", "'single'", "''"),
        ),
        _p(
            "reverse_each_word",
            "(s: str) -> str",
            "returns the words of `s` (separated by whitespace) each spelled backwards, in their "
            "original order, joined by single spaces",
            "return ' '.join(w[::-1] for w in s.split())",
            *("'hello world'", "'abc'", "''", "'ab  cd'"),
        ),
    ]
    number_theory = [
        _p(
            "gcd",
            "(a: int, b: int) -> int",
            "returns the greatest common divisor of the non-negative integers `a` and `b` "
            "(gcd(0, 0) is 0)",
            "while b:\n    a, b = b, a % b\nreturn a",
            *("12, 18", "7, 5", "0, 9", "100, 75", "0, 0"),
        ),
        _p(
            "lcm",
            "(a: int, b: int) -> int",
            "returns the least common multiple of the positive integers `a` and `b`",
            "x, y = a, b\nwhile y:\n    x, y = y, x % y\nreturn a * b // x",
            *("4, 6", "5, 7", "12, 18", "1, 9"),
        ),
    ]
    rle = [
        _p(
            "run_length_encode",
            "(s: str) -> str",
            "returns `s` run-length encoded: each run of a repeated character written as the "
            "character followed by the run's length",
            """
out = []
i = 0
while i < len(s):
    j = i
    while j < len(s) and s[j] == s[i]:
        j += 1
    out.append(s[i] + str(j - i))
    i = j
return ''.join(out)""",
            *("'aaabcc'", "''", "'abc'", "'zzzzzzzzzzzz'"),
        ),
        _p(
            "run_length_decode",
            "(s: str) -> str",
            "decodes a run-length encoding in which each run is a letter followed by its count in "
            "decimal digits, and returns the decoded string",
            """
out = []
i = 0
while i < len(s):
    c = s[i]
    j = i + 1
    while j < len(s) and s[j].isdigit():
        j += 1
    out.append(c * int(s[i + 1:j]))
    i = j
return ''.join(out)""",
            *("'a3b1c2'", "''", "'x12'", "'a1b1c1'"),
        ),
    ]
    digits = [
        _p(
            "digit_sum",
            "(n: int) -> int",
            "returns the sum of the decimal digits of the non-negative integer `n`",
            "return sum(int(d) for d in str(n))",
            *("1234", "0", "9", "1000001"),
        ),
        _p(
            "digital_root",
            "(n: int) -> int",
            "returns the digital root of the non-negative integer `n`: its digits summed "
            "repeatedly until one digit is left",
            "while n >= 10:\n    n = sum(int(d) for d in str(n))\nreturn n",
            *("38", "0", "9875", "5"),
        ),
    ]
    primes = [
        _p(
            "is_prime",
            "(n: int) -> bool",
            "returns True when the integer `n` is a prime number, else False",
            "if n < 2:\n    return False\nreturn all(n % d for d in range(2, int(n ** 0.5) + 1))",
            *("7", "1", "0", "2", "9", "97", "-3"),
        ),
        _p(
            "count_primes_below",
            "(n: int) -> int",
            "returns how many prime numbers are smaller than `n`",
            "return sum(1 for m in range(2, n) if all(m % d for d in range(2, int(m ** 0.5) + 1)))",
            *("10", "2", "3", "100"),
        ),
    ]
    sums = [
        _p(
            f"sum_of_{name}",
            "(n: int) -> int",
            f"returns the sum of the {name} of the integers from 1 to `n` (0 when `n` is 0)",
            f"return sum(i ** {power} for i in range(1, n + 1))",
            *("3", "0", "1", "10"),
        )
        for name, power in (("squares", 2), ("cubes", 3))
    ]
    singles = [
        _p(
            "clamp",
            "(x: int, lo: int, hi: int) -> int",
            "returns `x` limited to the range from `lo` to `hi` (lo <= hi): `lo` when it is "
            "below, `hi` when it is above, else `x`",
            "return max(lo, min(x, hi))",
            *("5, 0, 10", "-3, 0, 10", "42, 0, 10", "7, 7, 7"),
        ),
        _p(
            "second_largest",
            "(nums: list[int]) -> int",
            "returns the second largest distinct value of `nums` (which holds at least two "
            "distinct values)",
            "return sorted(set(nums))[-2]",
            *("[3, 1, 4, 1, 5]", "[2, 2, 1]", "[-1, -5, -3]", "[10, 10, 9, 10]"),
        ),
        _p(
            "fibonacci",
            "(n: int) -> int",
            "returns the `n`-th Fibonacci number, where fibonacci(0) is 0 and fibonacci(1) is 1",
            "a, b = 0, 1\nfor _ in range(n):\n    a, b = b, a + b\nreturn a",
            *("10", "0", "1", "2", "30"),
        ),
        _p(
            "factorial",
            "(n: int) -> int",
            "returns n! for the non-negative integer `n` (0! is 1)",
            "out = 1\nfor i in range(2, n + 1):\n    out *= i\nreturn out",
            *("5", "0", "1", "12"),
        ),
        _p(
            "to_binary",
            "(n: int) -> str",
            "returns the non-negative integer `n` written in binary, without a prefix ('0' for 0)",
            "return format(n, 'b')",
            *("10", "0", "1", "255"),
        ),
        _p(
            "remove_duplicates",
            "(items: list[int]) -> list[int]",
            "returns `items` without repeated values, each value kept at its first occurrence",
            "seen = set()\nout = []\nfor x in items:\n    if x not in seen:\n"
            "        seen.add(x)\n        out.append(x)\nreturn out",
            *("[1, 2, 1, 3, 2]", "[]", "[5, 5, 5]", "[3, 1, 2]"),
        ),
        _p(
            "word_count",
            "(s: str) -> dict[str, int]",
            "returns a dictionary mapping each lowercased word of `s` (words are separated by "
            "whitespace) to how many times it occurs",
            "out = {}\nfor w in s.lower().split():\n    out[w] = out.get(w, 0) + 1\nreturn out",
            *("'the cat and The hat'", "''", "'a a a'"),
        ),
        _p(
            "rotate_left",
            "(items: list[int], k: int) -> list[int]",
            "returns `items` rotated `k` places to the left (k >= 0, possibly larger than the "
            "list; an empty list stays empty)",
            "if not items:\n    return []\nk %= len(items)\nreturn items[k:] + items[:k]",
            *("[1, 2, 3, 4, 5], 2", "[], 3", "[1, 2, 3], 3", "[1, 2, 3], 7"),
        ),
        _p(
            "capitalize_words",
            "(s: str) -> str",
            "returns `s` with the first letter of every space-separated word in upper case and "
            "its other letters in lower case, the spaces kept as they are",
            "return ' '.join(w[:1].upper() + w[1:].lower() for w in s.split(' '))",
            *("'hello world'", "'PYTHON is FUN'", "''", "'a  b'"),
        ),
        _p(
            "flatten",
            "(nested: list[list[int]]) -> list[int]",
            "returns the elements of the lists in `nested`, in order, as one list",
            "return [x for inner in nested for x in inner]",
            *("[[1, 2], [3], [4, 5]]", "[]", "[[], [1], []]"),
        ),
        _p(
            "max_subarray_sum",
            "(nums: list[int]) -> int",
            "returns the largest sum of a non-empty run of consecutive elements of the non-empty "
            "list `nums`",
            "best = cur = nums[0]\nfor x in nums[1:]:\n    cur = max(x, cur + x)\n"
            "    best = max(best, cur)\nreturn best",
            *("[-2, 1, -3, 4, -1, 2, 1, -5, 4]", "[1]", "[-3, -1, -2]", "[2, 3, -10, 4]"),
        ),
        _p(
            "is_anagram",
            "(a: str, b: str) -> bool",
            "returns True when `a` and `b` hold the same letters the same number of times, "
            "ignoring spaces and case, else False",
            "return sorted(a.replace(' ', '').lower()) == sorted(b.replace(' ', '').lower())",
            *("'Listen', 'Silent'", "'abc', 'abd'", "'Dormitory', 'dirty room'", "'aab', 'ab'"),
        ),
        _p(
            "running_sum",
            "(nums: list[int]) -> list[int]",
            "returns the running totals of `nums`: element i is the sum of nums[0] to nums[i]",
            "out = []\ntotal = 0\nfor x in nums:\n    total += x\n    out.append(total)\n"
            "return out",
            *("[1, 2, 3, 4]", "[]", "[5, -5, 5]"),
        ),
        _p(
            "chunk",
            "(items: list[int], size: int) -> list[list[int]]",
            "returns `items` cut into consecutive lists of `size` elements (size >= 1), the last "
            "one shorter when the length is not a multiple of `size`",
            "return [items[i:i + size] for i in range(0, len(items), size)]",
            *("[1, 2, 3, 4, 5], 2", "[], 3", "[1, 2, 3], 3", "[1, 2], 5"),
        ),
    ]
    return [
        multiples,
        fizz,
        counts,
        caesar,
        palindromes,
        words,
        number_theory,
        rle,
        digits,
        primes,
        sums,
        *[[p] for p in singles],
    ]


def problems() -> list[Problem]:
    """Every problem, one of each family in turn (the first variants, then the second, ...)."""
    families = _families()
    out: list[Problem] = []
    for depth in range(max(len(f) for f in families)):
        out += [f[depth] for f in families if depth < len(f)]
    return out

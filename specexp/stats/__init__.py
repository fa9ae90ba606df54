"""The statistics behind specexp's answer checks: whether speculative decoding changed what a
model says (docs/answers.md).

- `sampled`: two samples of generated token sequences at temperature > 0, the same distribution
  or not (a stratified permutation test, and the shift it could have detected);
- `paired`: two runs of one task scored item by item (McNemar's exact test, a paired bootstrap
  interval);
- `proportions`: two published scores with their item counts only (an unpaired interval).
"""

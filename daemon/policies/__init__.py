"""Policies: TOML rules that accept, reject or hold proposals (the engine only; passes use it later).

- ``model``: Policy, Rule, Limits, Facts, Counts, Decision (plain data).
- ``load``: read and validate a policy file, with line-numbered errors and the hard invariants.
- ``engine``: ``evaluate(policy, facts, counts)``, pure.
"""

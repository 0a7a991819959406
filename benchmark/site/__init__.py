"""The static leaderboard site (``sago leaderboard build``).

The site renders ``leaderboard/leaderboard.json``, the frozen variant set and each submission's records;
it computes no statistics. See docs/SUBMITTING.md for the pull-request flow the validator guards.
"""

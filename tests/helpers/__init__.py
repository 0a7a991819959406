"""Test-only helpers: a toy variant set (``toy``), synthetic deltas (``synthetic``) and the example
leaderboard built from them (``leaderboard_example``; ``make example-fixture`` regenerates the fixture)."""

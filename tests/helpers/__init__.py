"""Test-only helpers: a toy variant set (``toy``), synthetic deltas (``synthetic``), the example
leaderboard built from them (``leaderboard_example``; ``make example-fixture`` regenerates the fixture)
and a small, complete site checkout (``site_tree``)."""

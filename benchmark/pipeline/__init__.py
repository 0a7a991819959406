"""The stages run end to end over files: ``sago analyze`` (:mod:`benchmark.pipeline.analyze`).

Reading results folders, deciding what is stale (:mod:`benchmark.pipeline.origin`), staging and renaming
outputs all or none: the orchestration around ``benchmark.stats``, which stays pure functions from the
deltas table to tables and documents.
"""

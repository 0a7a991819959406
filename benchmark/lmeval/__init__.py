"""SAGO's variant sets inside lm-evaluation-harness, and its sample logs back into SAGO.

lm-eval itself is never imported here: the export writes YAML and the import reads JSON, so the core
package keeps working without the optional ``peer`` extra.
"""

"""The content door: typed, pure transforms for content rather than tool reports.

One module per job — toon/json_crusher (structured data), tabular (CSV/TSV), yaml_toml,
outline (tree-sitter), search (grep/rg/find), logs, markdown (+HTML), prose, reflex (intent
line model), gate (gzip probe, inverted lossless steps), binary, sniff (which one applies).
Not responsible for guarding, archiving or the ledger (the pipeline is). Every transform is
`(text, Context) -> TransformResult` and does no I/O beyond reading its packaged data.
"""

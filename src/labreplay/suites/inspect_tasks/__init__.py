"""inspect_ai tasks of labreplay (the `labreplay[inspect]` extra), registered through inspect's
entry points as `labreplay/conditions` and `labreplay/campaign`; `labreplay import
inspect-log` brings an inspect log's results into a labreplay store."""

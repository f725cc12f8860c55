"""Online evaluation (first slice): a live lab as another source of campaign episodes.

`lab.py`: the live source (the lab's posts, checked and recorded) and the environment that
reads a campaign's evidence and outcomes from it; `emulate.py`: a compiled campaign played as a
live lab; `service.py`: the lab-side HTTP service, whose protocol is `openapi.json`;
`record.py`: what a lab may post, and a live run's posts read back as its evaluator record
(scoring, `store verify`) and its versioned record. The core runner records the run; nothing
here writes a store.
"""

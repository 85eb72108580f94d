"""Content screening shared by ingestion (knowledge screens document chunks) and answering (agents screen
questions and quoted text): prompt injection (:mod:`screening.injection`, patterns in
:mod:`screening.injection_patterns`), PII (:mod:`screening.pii`) and confidential markings
(:mod:`screening.markings`). A pure library: no Django, and no import of any app of this project, so every
layer may use it."""

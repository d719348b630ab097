"""What the person lets agents do: policies per notebook and folder, approvals, protected tags.

``rules.py`` (pure: classes, decisions, presets, matching), ``store.py`` (the person's rules in
a JSON file outside the contents root), ``tags.py`` (pure: the ``ask-before-run`` tag no agent
tool may add or remove), ``approvals.py`` (the pending approvals and the lab's answers) and
``gate.py`` (where the tools ask). Nothing is imported here, so that the notebook core can use
``tags.py`` without the rest.
"""

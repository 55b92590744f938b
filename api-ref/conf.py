"""Sphinx configuration for the API reference (``tox -e api-ref``)."""

project = 'Placement API reference'
copyright = 'the Placement authors'
master_doc = 'index'
exclude_patterns = ['build']
html_theme = 'alabaster'
html_title = 'Placement API reference'
# Examples are shell sessions and JSON; no language is guessed for them.
highlight_language = 'none'
# The console lexer stops at shell quotes spanning lines (the multi-line
# curl -d bodies of the examples) and falls back to plain text, which is
# what they should look like anyway.
suppress_warnings = ['misc.highlighting_failure']

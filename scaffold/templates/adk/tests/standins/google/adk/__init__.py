"""Stand-in of Google ADK (google-adk), with the interfaces the template uses: see
tests/standins/standin_model.py."""

"""The CLI's commands, one module each; `app.cli.main` parses the flags and loads only the one
it runs, so the commands that open the dashboard load nothing heavy before its first frame.
"""

#!/usr/bin/env python3
"""Run REDbot (the `redbot` package) on one URL; print its notes as JSON.

usage: notes.py URL
Prints a list of {"name", "level", "summary"} -- every note REDbot made
about the response, and about the extra requests it sends itself (ranges,
validation, content negotiation), which it adds to the response's notes,
sub-notes included.  A separate process per URL: REDbot runs on thor's event loop,
which is a process-wide singleton.
"""
import json
import sys
from configparser import ConfigParser

import thor
from redbot.resource import HttpResource


def main():
    config = ConfigParser()
    # The servers under test listen on 127.0.0.1, which REDbot refuses
    # unless told otherwise (its CLI does the same).
    config.read_dict({"redbot": {"enable_local_access": "True"}})
    resource = HttpResource(config["redbot"], descend=False)
    resource.set_request(sys.argv[1])

    @thor.events.on(resource)
    def check_done():
        thor.stop()

    resource.check()
    thor.run()
    out = []

    def add(note):
        out.append({"name": type(note).__name__, "level": note.level.value,
                    "summary": str(note.summary)})
        for sub in note.subnotes:
            add(sub)

    if resource.response.complete:
        for note in resource.response.notes:
            add(note)
    else:
        out.append({"name": "NO_RESPONSE", "level": "bad",
                    "summary": str(resource.fetch_error or "no response")})
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()

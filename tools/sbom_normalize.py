"""Makes a cyclonedx-gomod SBOM reproducible (tools/dist.sh).

cyclonedx-gomod stamps the wall clock, and hashes this repository's module, which the build
replaces by its working tree, over whatever that tree holds (_build/ included). The timestamp
becomes SOURCE_DATE_EPOCH; this repository's modules keep their version (the commit) and lose
the tree hash. Keys are written sorted.

    python3 tools/sbom_normalize.py SBOM.json SOURCE_DATE_EPOCH
"""

import datetime
import json
import sys

LOCAL_MODULE = "github.com/gym-telemetry/otelcol-gym"


def main() -> None:
    path, epoch = sys.argv[1], int(sys.argv[2])
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    stamp = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
    doc["metadata"]["timestamp"] = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    for component in [doc["metadata"]["component"], *doc.get("components", [])]:
        if component["name"].startswith(LOCAL_MODULE):
            component.pop("hashes", None)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

"""Clean a CSV file: trim cells, drop empty rows, lower_snake_case headers."""

import csv
import re
import sys


def snake(header: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", header.strip().lower()).strip("_")


def main(source: str, target: str) -> None:
    with open(source, newline="") as src, open(target, "w", newline="") as out:
        rows = csv.reader(src)
        writer = csv.writer(out)
        writer.writerow([snake(h) for h in next(rows)])
        for row in rows:
            cells = [cell.strip() for cell in row]
            if any(cells):
                writer.writerow(cells)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

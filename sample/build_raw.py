"""Build sample/raw/: five small raw files (HTML, Markdown, DOCX, PPTX, XLSX) for ``rechunk parse``.

The texts are written for this project (public domain, CC0). The Office files are made with
python-docx, python-pptx and openpyxl (installed with ``rechunk[parse]``); the committed files are
what this script wrote once, so running it again changes only their zip timestamps.

    python sample/build_raw.py
"""

from __future__ import annotations

from pathlib import Path

RAW = Path(__file__).resolve().parent / "raw"

HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Field guide to river birds</title></head>
<body>
<h1>Field guide to river birds</h1>
<p>Rivers give birds food, cover and a road to travel along. This guide lists the species a walker
meets most often along slow lowland rivers, and how to tell them apart at a distance.</p>
<h2>Kingfisher</h2>
<p>A flash of electric blue low over the water is almost always a kingfisher. It perches on a
branch above a still pool, bobs its head, and dives straight down for small fish.</p>
<h2>Grey heron</h2>
<p>The heron stands motionless in the shallows for minutes at a time. In flight its neck is
folded back and its legs trail behind, which tells it from a crane.</p>
<table>
<tr><th>Species</th><th>Length (cm)</th><th>Where</th></tr>
<tr><td>Kingfisher</td><td>16</td><td>overhanging branches</td></tr>
<tr><td>Grey heron</td><td>95</td><td>shallows, field edges</td></tr>
<tr><td>Dipper</td><td>18</td><td>fast stony streams</td></tr>
</table>
<ul><li>Walk upstream in the morning, with the sun behind you.</li><li>Stop at bends: birds rest where the current slows.</li></ul>
</body></html>
"""

MARKDOWN = """# Sourdough starter notes

A starter is flour and water in which wild yeasts and lactic acid bacteria have settled. It needs
regular feeding and a warm place, and it rewards patience.

## Feeding

Discard all but 50 g, then add 50 g of flour and 50 g of water. Stir well and cover loosely.
At 24 °C a healthy starter doubles in four to six hours.

```text
day 1-3   feed once a day, expect little activity
day 4-7   feed twice a day, bubbles and a sour smell appear
day 8+    ready when it doubles reliably after each feed
```

## Troubleshooting

| sign | likely cause | what to do |
|---|---|---|
| grey liquid on top | hungry starter | stir it in and feed |
| no rise after a week | too cold | move it somewhere warmer |
| pink or orange streaks | contamination | throw it away and start again |
"""


def build() -> None:
    import docx
    import openpyxl
    import pptx

    RAW.mkdir(exist_ok=True)
    (RAW / "river-birds.html").write_text(HTML, encoding="utf-8")
    (RAW / "sourdough.md").write_text(MARKDOWN, encoding="utf-8")

    document = docx.Document()
    document.add_heading("Allotment rules", level=1)
    document.add_paragraph(
        "These rules keep the allotment site pleasant for every plot holder. Read them before you start "
        "digging, and ask the site secretary if anything is unclear."
    )
    document.add_heading("Plots", level=2)
    document.add_paragraph("At least three quarters of each plot must be cultivated during the growing season.")
    document.add_paragraph("Paths between plots are kept clear and mown by the holders on either side.")
    document.add_heading("Water", level=2)
    document.add_paragraph("Hoses may be used only before 9 am and after 6 pm. Fill water butts from the roof gutters.")
    table = document.add_table(rows=3, cols=2)
    for row, (item, fee) in enumerate([("Item", "Yearly fee"), ("Full plot", "£60"), ("Half plot", "£35")]):
        table.cell(row, 0).text = item
        table.cell(row, 1).text = fee
    document.save(RAW / "allotment-rules.docx")

    deck = pptx.Presentation()
    for title, body in [
        ("Cycling to work", "Why a third of our staff now ride in, and how to join them."),
        ("Routes", "Canal towpath: flat, 7 km, lit until 10 pm.\nHill road: shorter, 5 km, steep climb at the end."),
        ("At the office", "Covered racks for 40 bikes behind building B.\nShowers and lockers on the ground floor."),
    ]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    deck.save(RAW / "cycling.pptx")

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Rainfall"
    sheet.append(["Month", "Rainfall (mm)", "Rain days"])
    for month, mm, days in [("January", 78, 14), ("February", 59, 11), ("March", 61, 12), ("April", 52, 10)]:
        sheet.append([month, mm, days])
    stations = book.create_sheet("Stations")
    stations.append(["Station", "Altitude (m)"])
    stations.append(["Valley", 42])
    stations.append(["Ridge", 310])
    book.save(RAW / "rainfall.xlsx")


if __name__ == "__main__":
    build()

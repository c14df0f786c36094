"""Upload local files to gs:// (the emulator): gcs_upload.py LOCAL GS_URL ..."""
import sys
from apache_beam.io.filesystems import FileSystems
args = sys.argv[1:]
for local, url in zip(args[::2], args[1::2]):
    with open(local, "rb") as src, FileSystems.create(url) as dst:
        dst.write(src.read())

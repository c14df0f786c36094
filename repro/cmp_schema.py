"""Compare the Parquet schemas/metadata of two rechunk outputs (old vs new sink)."""
import sys, glob, pyarrow.parquet as pq, pyarrow.dataset as ds
a, b = sys.argv[1:3]
for sub in ("chunks", "dead_letter", "documents", "deleted"):
    fa = sorted(glob.glob(f"{a}/{sub}/*")); fb = sorted(glob.glob(f"{b}/{sub}/*"))
    if not fa and not fb: continue
    pa_, pb = pq.ParquetFile(fa[0]), pq.ParquetFile(fb[0])
    print(sub, "arrow schema equal:", pa_.schema_arrow.equals(pb.schema_arrow, check_metadata=True))
    if not pa_.schema_arrow.equals(pb.schema_arrow, check_metadata=True):
        print(" A", pa_.schema_arrow); print(" B", pb.schema_arrow)
    print(" parquet schema equal:", pa_.schema.equals(pb.schema))
    if not pa_.schema.equals(pb.schema): print(pa_.schema, pb.schema)
    ma, mb = pa_.metadata, pb.metadata
    print(" created_by", ma.created_by, "|", mb.created_by, "format", ma.format_version, mb.format_version)
    for i in range(ma.num_columns):
        ca, cb = ma.row_group(0).column(i) if ma.num_row_groups else None, mb.row_group(0).column(i) if mb.num_row_groups else None
        if ca and cb:
            print("  ", ca.path_in_schema, ca.encodings, ca.compression, "|", cb.encodings, cb.compression)
    ta = ds.dataset(f"{a}/{sub}").to_table(); tb = ds.dataset(f"{b}/{sub}").to_table()
    print(" rows", ta.num_rows, tb.num_rows, "dataset schemas equal", ta.schema.equals(tb.schema, check_metadata=True))

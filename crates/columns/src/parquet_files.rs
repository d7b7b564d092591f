//! Tables written as Parquet files (feature `parquet`): Snappy-compressed,
//! one row group per table, created as Kleinrock creates every file
//! (kleinrock_files: never through a link, into a device or a FIFO).

use std::io;
use std::path::Path;

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

/// Writes `batch` to a new file at `path` (a regular file there is
/// replaced).
pub fn write_parquet(path: &Path, batch: &RecordBatch) -> io::Result<()> {
    let file = kleinrock_files::replace(path)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut w =
        ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(io::Error::other)?;
    w.write(batch).map_err(io::Error::other)?;
    w.close().map_err(io::Error::other)?;
    Ok(())
}

/// Writes every table of a run (RUN_TABLES) as `NAME.parquet` in `dir`.
pub fn write_run(dir: &Path, r: &kleinrock_sim::Results) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for name in crate::RUN_TABLES {
        let t = crate::run_table(r, name).expect("a run table");
        write_parquet(&dir.join(format!("{name}.parquet")), &t)?;
    }
    Ok(())
}

//! The dataset card of a set's items exported as a Hugging Face dataset folder: YAML front
//! matter that `datasets.load_dataset(DIR)` reads (the Parquet file as the `test` split, each
//! column's type) and a body saying what the items are and how they were made: the benchmark,
//! the set's id, the build parameters exactly as stored (generator, seed...) and the version of
//! the tool that wrote it.

use super::table::{Kind, Table};
use crate::store::{Id, Record, Store, StoredSet, StoredSpec};
use anyhow::{Context, Result};

/// Where the folder keeps its one Parquet file (the hub's naming of a split's shards).
pub const DATA_FILE: &str = "data/test-00000-of-00001.parquet";

/// `datasets`' name for a column type.
fn dtype(kind: Kind) -> &'static str {
    match kind {
        Kind::Text => "string",
        Kind::Int => "int64",
        Kind::Float => "float64",
        Kind::Bool => "bool",
    }
}

/// The card of set `name` (`set`, of `benchmark`), whose items are `items`.
pub fn card(
    reg: &Store,
    name: &str,
    set: &StoredSet,
    benchmark: &str,
    items: &Table,
) -> Result<String> {
    let set_id = set.id();
    let spec = reg
        .get::<StoredSpec>(&Id(set.spec))?
        .with_context(|| format!("set {}'s build spec is missing", set_id.short()))?;
    let mut out = String::from("---\n");
    out.push_str("configs:\n- config_name: default\n  data_files:\n  - split: test\n");
    out.push_str(&format!("    path: {DATA_FILE}\n"));
    out.push_str("dataset_info:\n  features:\n");
    for (column, kind) in items.schema() {
        out.push_str(&format!(
            "  - name: {column}\n    dtype: {}\n",
            dtype(*kind)
        ));
    }
    out.push_str("tags:\n- deltalogic\n---\n\n");
    out.push_str(&format!(
        "# `{name}`: {} {benchmark} items\n\n\
         Exported by deltalogic {} from set `{name}` (id `{}`) of benchmark `{benchmark}`, \
         one row per item in the set's order.\n\n",
        items.len(),
        env!("CARGO_PKG_VERSION"),
        set_id.hex()
    ));
    out.push_str(
        "## How it was made\n\nThe set's build parameters as the store keeps them (the \
         generator or source, its seed and sizes):\n\n```json\n",
    );
    out.push_str(&spec.json);
    out.push_str("\n```\n\n## Columns\n\n| column | type |\n|---|---|\n");
    for (column, kind) in items.schema() {
        out.push_str(&format!("| `{column}` | {} |\n", dtype(*kind)));
    }
    out.push_str(
        "\n`set`, `set_id` and `item_index` are the set's; `item_id` is the item's content \
         id in the store, which `deltalogic export table --what results|scores` rows carry too. \
         The other columns are the benchmark's own export (`deltalogic export items`); nested \
         values are JSON text.\n",
    );
    Ok(out)
}

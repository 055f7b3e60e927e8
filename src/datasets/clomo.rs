//! CLoMo JSON arrays: `{instruction, input, output, qtype, id_string, input_info{Q, P, O, Om}}`.
//! The premises are the argument P and the two candidate premises O and Om, as given; the query
//! is the question Q. The task fields (the instruction and input the dataset renders as the
//! system and user turns of its prompt, the gold output, the relation type) are kept in `extra`
//! for `build clomo`.

use super::record::{self, Fields, Place, Record, Source};
use super::{BaseItem, ReadError, ReadFile};

pub(super) fn read(src: &Source) -> Result<ReadFile, ReadError> {
    record::read_json_array(src, |place, rec| Ok(vec![item(src, place, rec)?]))
}

fn item(src: &Source, place: Place, rec: &Record) -> Fields<BaseItem> {
    let info = record::object_field(rec, "input_info")?;
    let info_str = |key| record::str_field(info, key).map_err(|e| e.within("input_info"));
    let premises = vec![
        info_str("P")?.to_string(),
        info_str("O")?.to_string(),
        info_str("Om")?.to_string(),
    ];
    let query = info_str("Q")?.to_string();
    let id = record::str_field(rec, "id_string")?;
    let extra = record::extra([
        ("id_string", id.to_string()),
        ("input", record::str_field(rec, "input")?.to_string()),
        (
            "instruction",
            record::str_field(rec, "instruction")?.to_string(),
        ),
        ("output", record::str_field(rec, "output")?.to_string()),
        ("qtype", record::scalar_field(rec, "qtype")?),
    ]);
    Ok(BaseItem {
        origin: src.origin(place.to_string(), id),
        world: None,
        premises,
        query,
        dataset_label: None,
        formal: None,
        extra,
    })
}

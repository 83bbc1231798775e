//! The state codec's row check and every row accessor: bytes that `Row::from_stored` accepts
//! must be safe to read through every accessor (no panic), and read back as valid JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sidejoin_core::row::Row;

fuzz_target!(|data: &[u8]| {
    let Ok(row) = Row::from_stored(data) else {
        return;
    };
    serde_json::from_slice::<serde_json::Value>(row.json()).expect("a stored row is JSON");
    let _ = row.shape();
    let _ = row.to_value();
    for (i, (name, value)) in row.columns().enumerate() {
        assert_eq!(row.column(i).0, name);
        assert_eq!(row.value_at(i).as_bytes(), value.as_bytes());
        let _ = (
            value.kind(),
            value.numeric(),
            value.as_i64(),
            value.as_f64(),
        );
        let _ = (value.as_bool(), value.as_str(), value.to_value());
        assert!(value.equals(&value));
        let (n, v) = row.column_ranges(i);
        assert_eq!(&row.json()[n], name);
        assert_eq!(&row.json()[v], value.as_bytes());
        assert!(row.find(name, i).is_some());
        let _ = row.get(name);
        let _ = row.run(0, i);
    }
});

//! The float text rule of `ardacat_core::types::format_float` against a real PostgreSQL: for
//! random bit patterns, short decimals and tie-prone values, our text is exactly `float8`'s
//! output (`extra_float_digits` ≥ 1: shortest round-trip digits, exponent form when the decimal
//! exponent is < -4 or >= 15). Both backends and both frontends print floats with this function.

use ardacat_core::types::{Value, ValueType, format_float};
use ardacat_store::{Db, DbOptions};

const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";

#[tokio::test]
async fn float_text_is_postgresqls() {
    let url = std::env::var("ARDACAT_TEST_PG").unwrap_or_else(|_| DEFAULT_PG.to_string());
    let db = Db::open(&url, DbOptions { pool_size: 1, ..DbOptions::default() })
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL must be reachable at {url}: {e}"));
    let mut c = db.acquire().await.unwrap();
    c.execute_batch("SET extra_float_digits = 1").await.unwrap();
    // A small xorshift: reproducible without a dependency.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut values: Vec<f64> = Vec::new();
    for i in 0..6000 {
        let r = next();
        let f = match i % 3 {
            0 => f64::from_bits(r),
            1 => (r % 2_000_000_000) as f64 / 10f64.powi((r >> 40) as i32 % 40 - 20),
            _ => ((1u64 << 52) | (r & ((1 << 52) - 1))) as f64 * 2f64.powi((r >> 56) as i32 % 160 - 80),
        };
        if f.is_finite() {
            values.push(f);
        }
    }
    values.extend([1e308, 1e15, 1e14, 1e-4, 1e-5, -0.0, 0.0, 5e-324, f64::MAX, 2.9802322387695312e-8]);
    for chunk in values.chunks(100) {
        let cols: Vec<String> = (1..=chunk.len()).map(|i| format!("(${i}::float8)::text")).collect();
        let params: Vec<Value> = chunk.iter().map(|f| Value::Float(*f)).collect();
        let types = vec![ValueType::Text; chunk.len()];
        let rows = c.query(&format!("SELECT {}", cols.join(", ")), &params, &types).await.unwrap();
        for (f, pg) in chunk.iter().zip(&rows[0]) {
            let Value::Text(pg) = pg else { panic!("{pg:?}") };
            assert_eq!(&format_float(*f), pg, "bits {:#x}", f.to_bits());
        }
    }
    drop(c);
    db.close().await;
}

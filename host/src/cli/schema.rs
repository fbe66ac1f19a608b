//! `teamhost schema`: the JSON Schema of the team manifest
//! (`manifest_schema.json`, hand-written beside this file), for editors
//! (Taplo / Even Better TOML: `#:schema ./teamhost-manifest.schema.json` at
//! the top of `team.toml`). A test holds it to the keys the manifest's
//! parser accepts: every table's keys are exactly the parser's, in both
//! directions, so a key added to `manifest.rs` fails the test until the
//! schema has it.

/// The schema, as printed.
pub(super) const SCHEMA: &str = include_str!("manifest_schema.json");

/// Prints [`SCHEMA`].
pub(super) fn print() -> anyhow::Result<()> {
    super::output::write_stdout(SCHEMA.trim_end())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::SCHEMA;
    use crate::manifest::Manifest;

    /// The keys the parser accepts in a table: a document with the
    /// unknown key `zz_unknown` at `{KEY}` is refused, and serde's error
    /// lists what it expected.
    fn accepted(template: &str) -> BTreeSet<String> {
        let doc = template.replace("{KEY}", "zz_unknown = 1");
        let err = toml::from_str::<Manifest>(&doc)
            .expect_err("an unknown key is refused")
            .to_string();
        let expected = err
            .split_once("expected")
            .unwrap_or_else(|| panic!("no list of keys in: {err}"))
            .1;
        let keys: BTreeSet<String> = expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        assert!(!keys.is_empty(), "{err}");
        keys
    }

    /// The property names of the schema object at `pointer`.
    fn in_schema(schema: &serde_json::Value, pointer: &str) -> BTreeSet<String> {
        let obj = schema
            .pointer(pointer)
            .unwrap_or_else(|| panic!("no {pointer} in the schema"));
        assert_eq!(obj["additionalProperties"], false, "{pointer}");
        obj["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{pointer} has no properties"))
            .keys()
            .cloned()
            .collect()
    }

    #[test]
    fn the_schema_names_exactly_the_keys_the_manifest_accepts_in_every_table() {
        let schema: serde_json::Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
        let tables = [
            ("{KEY}\n[team]\nname = \"t\"", ""),
            ("[team]\n{KEY}", "/properties/team"),
            ("[model]\n{KEY}", "/properties/model"),
            ("[hooks]\n{KEY}", "/properties/hooks"),
            ("[approvals]\n{KEY}", "/properties/approvals"),
            (
                "[approvals.policy]\n{KEY}",
                "/properties/approvals/properties/policy",
            ),
            (
                "[[approvals.route]]\n{KEY}",
                "/properties/approvals/properties/route/items",
            ),
            ("[[teammate]]\n{KEY}", "/$defs/teammate"),
            ("[[teammate]]\n[teammate.limits]\n{KEY}", "/$defs/limits"),
            (
                "[[teammate]]\n[teammate.model_policy]\n{KEY}",
                "/$defs/model_policy",
            ),
            ("[[teammate]]\n[teammate.network]\n{KEY}", "/$defs/network"),
            ("[[agent]]\n{KEY}", "/$defs/agent"),
            ("[[task]]\n{KEY}", "/$defs/task"),
            ("[lead]\n{KEY}", "/properties/lead"),
            ("[[catalogue]]\n{KEY}", "/$defs/catalogue"),
        ];
        for (template, pointer) in tables {
            let parser = accepted(template);
            let schema_keys = in_schema(&schema, pointer);
            assert_eq!(
                parser,
                schema_keys,
                "table {pointer:?}: the manifest accepts {:?} that the schema lacks, the schema has {:?} that the manifest refuses",
                parser.difference(&schema_keys).collect::<Vec<_>>(),
                schema_keys.difference(&parser).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn the_documented_example_manifest_fits_the_schemas_keys() {
        // Every key of the format shown by `teamhost help run` is in the
        // schema (the parser accepts them: the manifest's own tests).
        let example: toml::Table = toml::from_str(include_str!("../manifest_format.toml")).unwrap();
        let schema: serde_json::Value = serde_json::from_str(SCHEMA).unwrap();
        let top = in_schema(&schema, "");
        for key in example.keys() {
            assert!(top.contains(key), "{key}");
        }
        let teammate = &example["teammate"].as_array().unwrap()[0];
        let keys = in_schema(&schema, "/$defs/teammate");
        for key in teammate.as_table().unwrap().keys() {
            assert!(keys.contains(key), "teammate.{key}");
        }
    }
}

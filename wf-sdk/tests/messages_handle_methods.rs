//! `#[workflow]` refuses handlers named like a method of `WorkflowHandle` (the client method
//! would be shadowed by the handle's own). Its list, `HANDLE_METHODS` in wf-macros, is written
//! by hand; this test reads it and the handle's source and fails when they drift apart.

use std::path::Path;

/// The wf-core source file holding the `impl<W..> WorkflowHandle<W>` blocks, from the
/// workspace root. Update it when the handle moves.
const CORE_HANDLE_FILE: &str = "wf-core/src/client/handle.rs";

/// The wf-macros source file holding `const HANDLE_METHODS`, from the workspace root.
const MACROS_LIST_FILE: &str = "wf-macros/src/check.rs";

/// In the list for another reason than an inherent method: `Clone`'s, always in scope.
const FROM_TRAITS: &[&str] = &["clone", "clone_from"];

/// In the list ahead of wf-core, which is about to add them to the handle.
const ANNOUNCED: &[&str] = &["export", "run_id"];

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}; has the file moved?", path.display()))
}

/// The string literals of `const HANDLE_METHODS: &[&str] = &[ .. ];`.
fn handle_methods_list(source: &str) -> Vec<String> {
    let start = source
        .find("const HANDLE_METHODS")
        .unwrap_or_else(|| panic!("no `const HANDLE_METHODS` in {MACROS_LIST_FILE}"));
    let body = &source[start..];
    let body = &body[body.find("&[").expect("the list opens with `&[`") + 2..];
    let body = &body[..body.find("];").expect("the list closes with `];`")];
    body.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The names of the `pub fn`s (sync or async) directly inside inherent
/// `impl<W..> WorkflowHandle<W..>` blocks: what method-call syntax on a handle can reach.
fn inherent_pub_methods(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("impl<W") {
        rest = &rest[at..];
        let open = rest.find('{').expect("an impl block opens");
        let header = &rest[..open];
        rest = &rest[open + 1..];
        if !header.contains("WorkflowHandle<W") || header.contains(" for ") {
            continue;
        }
        // Walk the block line by line; a method header sits at brace depth 1.
        let mut depth = 1;
        for line in rest.lines() {
            if depth == 1 {
                if let Some(name) = pub_fn_name(line.trim()) {
                    names.push(name);
                }
            }
            let (open, close) = braces(line);
            depth = (depth + open).saturating_sub(close);
            if depth == 0 {
                break;
            }
        }
    }
    names
}

/// The `{` and `}` of a line of code, outside string literals and comments.
fn braces(line: &str) -> (usize, usize) {
    let (mut open, mut close, mut in_string, mut escaped) = (0, 0, false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '/' if !in_string && chars.peek() == Some(&'/') => break,
            '{' if !in_string => open += 1,
            '}' if !in_string => close += 1,
            _ => {}
        }
    }
    (open, close)
}

/// `pub fn name(`, `pub async fn name<..>(`, `pub const fn ..`: the name. Not `pub(crate)`.
fn pub_fn_name(code: &str) -> Option<String> {
    let mut words = code.strip_prefix("pub ")?.split_whitespace();
    let mut word = words.next()?;
    while ["async", "const", "unsafe"].contains(&word) {
        word = words.next()?;
    }
    if word != "fn" {
        return None;
    }
    let name: String = words
        .next()?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    Some(name)
}

#[test]
fn handle_methods_match_the_handle() {
    let list = handle_methods_list(&read(MACROS_LIST_FILE));
    let methods = inherent_pub_methods(&read(CORE_HANDLE_FILE));
    assert!(
        methods.iter().any(|m| m == "workflow_id"),
        "found no `WorkflowHandle` methods in {CORE_HANDLE_FILE} (found {methods:?}); \
         has the handle moved? Update CORE_HANDLE_FILE"
    );

    let missing: Vec<&String> = methods
        .iter()
        .filter(|m| !m.starts_with("__") && !list.contains(m))
        .collect();
    assert!(
        missing.is_empty(),
        "`WorkflowHandle` has methods {missing:?} that HANDLE_METHODS in {MACROS_LIST_FILE} \
         lacks: a handler named like one would get a client method that is never called"
    );

    let stale: Vec<&String> = list
        .iter()
        .filter(|l| {
            !methods.contains(l)
                && !FROM_TRAITS.contains(&l.as_str())
                && !ANNOUNCED.contains(&l.as_str())
        })
        .collect();
    assert!(
        stale.is_empty(),
        "HANDLE_METHODS in {MACROS_LIST_FILE} lists {stale:?}, which `WorkflowHandle` does not \
         have: remove them, so that handlers may take those names"
    );
}

#[test]
fn the_parsers_read_what_they_should() {
    let list = handle_methods_list(r#"const HANDLE_METHODS: &[&str] = &["a", "b_c"]; x"#);
    assert_eq!(list, ["a", "b_c"]);
    let source = r#"
        impl<W> Clone for WorkflowHandle<W> {
            fn clone(&self) -> Self { todo!() }
        }
        impl<W: WorkflowDefinition> WorkflowHandle<W> {
            /// Docs { with a brace.
            pub fn id(&self) -> &str { "{\"" } // }
            pub fn url(&self) -> &str { "http://x/{" }
            pub async fn wait<R: X>(&self) {
                pub fn nested() {}
            }
            pub(crate) fn internal(&self) {}
            fn private(&self) {}
            #[doc(hidden)]
            pub fn __hidden(&self) {}
        }
        impl Other { pub fn not_a_handle(&self) {} }
    "#;
    assert_eq!(
        inherent_pub_methods(source),
        ["id", "url", "wait", "__hidden"]
    );
}

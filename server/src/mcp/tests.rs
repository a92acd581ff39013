//! The environment message's MCP parts from server states (`../shared/spec/skills-mcp.md`
//! section 11, checks 6 and 7).

use serde_json::json;

use super::client::{Listing, ToolInfo};
use super::*;

fn server(name: &str, scope: Scope) -> Server {
    Server {
        name: name.into(),
        scope,
        source: "/r/.mcp.json".into(),
        transport: Transport::Stdio {
            command: "x".into(),
            args: Vec::new(),
            env: Default::default(),
        },
        approval: Approval::Approved("test".into()),
        missing_vars: Vec::new(),
        entry: "{}".into(),
    }
}

fn demo_listing() -> Listing {
    Listing {
        tools: vec![
            ToolInfo {
                name: "echo".into(),
                description: "Echo text.".into(),
                input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}})
                    .as_object()
                    .unwrap()
                    .clone(),
            },
            ToolInfo {
                name: "add".into(),
                description: "Add two numbers.".into(),
                input_schema: json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "title": "addArguments"})
                    .as_object()
                    .unwrap()
                    .clone(),
            },
        ],
        instructions: Some(
            "DEMO-INSTRUCTIONS-MARKER: use add for sums.\nSecond line <b>bold</b> & more.".into(),
        ),
        resources: true,
        notes: Vec::new(),
        start_ms: 10,
    }
}

/// Check 6: the demo server adds the three resource tools and its two tools in code-unit
/// order, and its instructions; disabled, it adds nothing.
#[test]
fn a_connected_server_adds_names_resources_and_instructions() {
    let demo = ServerState {
        server: server("demo", Scope::Project),
        status: Status::Running,
        listing: Some(demo_listing()),
    };
    let p = parts(std::slice::from_ref(&demo), &[]);
    assert_eq!(
        p.deferred.as_deref().unwrap(),
        format!(
            "{}\nListMcpResourcesTool\nReadMcpResourceDirTool\nReadMcpResourceTool\nmcp__demo__add\nmcp__demo__echo",
            texts::DEFERRED_HEADER
        )
    );
    assert_eq!(
        p.instructions.as_deref().unwrap(),
        "# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to use their tools and resources:\n\n## demo\nDEMO-INSTRUCTIONS-MARKER: use add for sums.\nSecond line <b>bold</b> & more."
    );
    assert_eq!(p.failed, None);
    assert_eq!(p.connecting, None);
    // What it costs: 31 characters for the two names (m4), the definitions once loaded.
    assert_eq!(
        demo.tool_names().iter().map(|n| n.len()).sum::<usize>() + 2,
        31
    );
    assert!(demo.definitions_bytes() > 200);
    let disabled = ServerState {
        status: Status::Disabled("/r/.claude/settings.json".into()),
        ..demo.clone()
    };
    assert_eq!(parts(&[disabled], &[]), Parts::default());
    let not_approved = ServerState {
        status: Status::NotApproved,
        listing: None,
        ..demo
    };
    assert_eq!(parts(&[not_approved], &[]), Parts::default());
}

/// Check 7: failed servers in the failed note, connecting ones in theirs.
#[test]
fn failed_and_connecting_servers_give_their_notes() {
    let states = [
        ServerState {
            server: server("failing", Scope::Project),
            status: Status::Failed {
                code: "CONNECTION_CLOSED".into(),
                message: "Connection closed".into(),
            },
            listing: None,
        },
        ServerState {
            server: server("broken", Scope::Project),
            status: Status::Failed {
                code: "ENOENT".into(),
                message:
                    "ENOENT: no such file or directory, posix_spawn '/nonexistent/bin/mcp-server'"
                        .into(),
            },
            listing: None,
        },
        ServerState {
            server: server("slow", Scope::User),
            status: Status::Connecting,
            listing: None,
        },
    ];
    let p = parts(&states, &[]);
    let failed = p.failed.unwrap();
    assert!(failed.contains("\nbroken (ENOENT): \"ENOENT: no such file or directory, posix_spawn '/nonexistent/bin/mcp-server'\"\nfailing (CONNECTION_CLOSED): \"Connection closed\"\n\nTreat this"));
    assert!(p.connecting.unwrap().contains(":\nslow\n\nIf the user's"));
    assert_eq!(p.deferred, None);
}

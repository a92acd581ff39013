//! The permission rules and mode of a session, as the preview shows them (`preview`,
//! `context/preview`, the editors' context views) and as `check` lints them: every rule that
//! applies with the file and line it comes from, the mode and where it came from, the
//! additional working directories, and what was ignored or cannot match (the reference's stderr
//! warnings, and ours).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::{Finding, Severity};
use crate::permissions::{Form, Kind, Mode, ModeSource, Notice, Policy, Source};

/// Where a rule, a mode or a directory was written, for people: the origin, the file and the
/// 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceView {
    /// `managed`, `user`, `project`, `local`, `commandLine`.
    pub origin: crate::permissions::Origin,
    /// The settings file (absent for the command line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl SourceView {
    fn of(s: &Source) -> SourceView {
        SourceView {
            origin: s.origin,
            file: s.file.as_ref().map(|f| f.display().to_string()),
            line: s.line.map(|l| l + 1),
        }
    }

    /// `~/.claude/settings.json:4`, `command line`.
    pub fn describe(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            (Some(f), None) => f.clone(),
            (None, _) => self.origin.label().to_string(),
        }
    }
}

/// One rule that applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleView {
    pub kind: Kind,
    /// As written.
    pub rule: String,
    pub source: SourceView,
    /// It matches nothing (`Write(path)`, `Glob(path)`, an unknown tool: see the notices).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inert: bool,
}

/// An additional working directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryView {
    pub path: String,
    pub source: SourceView,
}

/// A warning about the permission settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoticeView {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceView>,
}

/// A mode a session may switch to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModeView {
    /// `default`, `acceptEdits`, `plan`, `dontAsk`, `bypassPermissions`.
    pub id: Mode,
    pub name: String,
    pub description: String,
}

impl ModeView {
    pub fn of(m: Mode) -> ModeView {
        ModeView {
            id: m,
            name: m.name().to_string(),
            description: m.description().to_string(),
        }
    }
}

/// A session's permissions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsView {
    pub mode: Mode,
    /// Where the mode came from: `{"from": "default"}`, `{"from": "settings", "origin", "file",
    /// "line"}` (0-based line), `{"from": "commandLine"}`, `{"from": "session"}`.
    pub mode_source: ModeSource,
    /// The modes the session may switch to (bypass permissions only where it may run).
    pub available_modes: Vec<ModeView>,
    /// The folder is trusted (its project file's allow rules and directories apply).
    pub trusted: bool,
    /// `allowManagedPermissionRulesOnly`: only the managed file's rules apply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub managed_only: bool,
    /// Every rule that applies, in file order (managed last), the command line's after.
    pub rules: Vec<RuleView>,
    pub additional_directories: Vec<DirectoryView>,
    /// What was ignored or cannot match, and notes on the mode.
    pub notices: Vec<NoticeView>,
}

/// The view of a policy.
pub fn view(p: &Policy) -> PermissionsView {
    let mut notices: Vec<NoticeView> = p.notices().iter().map(notice_view).collect();
    notices.extend(p.mode_notes().iter().map(|m| NoticeView {
        code: "permission-mode".into(),
        message: m.clone(),
        source: None,
    }));
    PermissionsView {
        mode: p.mode(),
        mode_source: p.mode_source(),
        available_modes: p.available().into_iter().map(ModeView::of).collect(),
        trusted: p.trusted(),
        managed_only: p.managed_only(),
        rules: p
            .rules()
            .iter()
            .map(|r| RuleView {
                kind: r.kind,
                rule: r.text.clone(),
                source: SourceView::of(&r.source),
                inert: matches!(r.form, Form::Inert),
            })
            .collect(),
        additional_directories: p
            .additional_dirs()
            .iter()
            .map(|(d, s)| DirectoryView {
                path: d.display().to_string(),
                source: SourceView::of(s),
            })
            .collect(),
        notices,
    }
}

fn notice_view(n: &Notice) -> NoticeView {
    NoticeView {
        code: n.code.clone(),
        message: n.message.clone(),
        source: Some(SourceView::of(&n.source)),
    }
}

/// The environment section's permission parts of a session that would start with `p` (the
/// additional directories by real path, as the session's tools hold them).
pub fn environment(fs: &dyn crate::fs::Fs, p: &Policy) -> crate::permissions::EnvironmentParts {
    let dirs: Vec<std::path::PathBuf> = p
        .additional_dirs()
        .iter()
        .map(|(d, _)| fs.canonicalize(d).unwrap_or_else(|_| d.clone()))
        .collect();
    p.environment(&dirs)
}

/// `check`'s findings on the permission settings: every notice (a rule that cannot match, an
/// untrusted project's ignored entries) and every allow rule a deny rule undoes, on its settings
/// file and line.
pub fn findings(p: &Policy) -> Vec<Finding> {
    let undone = crate::permissions::rule::undone(p.rules());
    p.notices()
        .iter()
        .chain(undone.iter())
        .filter_map(|n| {
            let file = n.source.file.clone()?;
            let severity = match n.code.as_str() {
                "permissions-untrusted" => Severity::Information,
                _ => Severity::Warning,
            };
            Some(Finding {
                path: file,
                line: n.source.line,
                start_col: 0,
                end_col: 0,
                severity,
                code: n.code.clone(),
                message: n.message.clone(),
            })
        })
        .collect()
}

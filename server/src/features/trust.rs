//! `claude-context trust`: a folder's workspace trust as the user sees it ([`view`]: the state,
//! where it is recorded, what waits for it and why), and the user's answer given outside a chat
//! ([`answer`]: yes, no, or forget it so that the next chat asks again). Kept in our record only
//! (`crate::trust::record`); Claude Code's record is read, never written.

use std::path::Path;

use super::preview::TrustView;
use crate::fs::RealFs;
use crate::host::Host;

/// What to do with a folder's trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    /// Remove our record: the next chat asks (Claude Code's record, if any, counts again).
    Forget,
}

/// The trust of `folder` (as a session there would see it) and what waits for it. Nothing of
/// the folder runs.
pub fn view(host: &Host, folder: &Path) -> Result<TrustView, String> {
    let at = crate::trust::Where::of(host);
    let mut opts = host.context_options(folder, &[], None)?;
    opts.trust = crate::trust::of_folder(&RealFs, &at, folder, true).0;
    let ctx = crate::context::build(&RealFs, &opts);
    let var = |k: &str| host.var(k).map(str::to_string);
    let model = crate::models::DEFAULT_MODEL;
    let ext = crate::extensions::gather(
        &RealFs,
        &ctx,
        &crate::extensions::Input {
            add_dirs: &[],
            model,
            window: crate::models::window(model),
            budget_variable: None,
            var: &var,
            state_dir: None,
            live: None,
        },
    );
    Ok(TrustView::of(&super::workspace::gate_of(
        &RealFs, &ctx, &ext, &at,
    )))
}

/// Records `answer` for `folder` (its real path); what was done, in words.
pub fn answer(host: &Host, folder: &Path, answer: Answer) -> Result<String, String> {
    let at = crate::trust::Where::of(host);
    let real = std::fs::canonicalize(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    match answer {
        Answer::Forget => {
            let Some(dir) = &at.records else {
                return Err("no state directory (HOME or XDG_STATE_HOME): nothing is kept".into());
            };
            match crate::trust::record::forget(dir, &real) {
                Ok(true) => Ok(format!(
                    "{}: your answer is forgotten; the next chat asks again",
                    real.display()
                )),
                Ok(false) => Ok(format!("{}: no answer of yours was kept", real.display())),
                Err(e) => Err(e.to_string()),
            }
        }
        Answer::Yes | Answer::No => {
            let yes = answer == Answer::Yes;
            let file = crate::trust::answer(&RealFs, &RealFs, &at, &real, yes, &host.today())?;
            Ok(format!(
                "{}: {} (kept in {})",
                real.display(),
                if yes { "trusted" } else { "not trusted" },
                file.display()
            ))
        }
    }
}

-- A busted output handler for the specs: one line per test, the failures in full, and a last
-- line `busted: N passed, N failed` that scripts/test adds up over the spec files.
return function(options)
  local busted = require("busted")
  local handler = require("busted.outputHandlers.base")()
  local function out(s)
    io.stdout:write(s .. "\n")
    io.stdout:flush()
  end
  local function message(t)
    local m = t.message
    if type(m) ~= "string" then
      m = require("pl.pretty").write(m)
    end
    return m or "nil error"
  end
  handler.testEnd = function(element, parent, status)
    local name = handler.getFullName(element)
    if status == "success" then
      out("  ok    " .. name)
    elseif status == "pending" then
      out("  skip  " .. name)
    else
      local list = status == "failure" and handler.failures or handler.errors
      local t = list[#list]
      out("  FAIL  " .. name)
      local trace = t and t.trace and t.trace.traceback or ""
      out("        " .. (t and message(t) or "?"):gsub("\n", "\n        "))
      if trace ~= "" then
        out("        " .. trace:gsub("\n", "\n        "))
      end
    end
    return nil, true
  end
  handler.error = function(element, parent, msg)
    out("  ERROR " .. tostring(msg))
    return nil, true
  end
  handler.suiteEnd = function()
    local failed = #handler.failures + #handler.errors
    out(("busted: %d passed, %d failed"):format(#handler.successes, failed))
    return nil, true
  end
  busted.subscribe({ "test", "end" }, handler.testEnd, { predicate = handler.cancelOnPending })
  busted.subscribe({ "error" }, handler.error)
  busted.subscribe({ "suite", "end" }, handler.suiteEnd)
  return handler
end

// capsule's session plugin for OpenCode (copied into the session dir by capsule/agents/opencode.py,
// loaded through OPENCODE_CONFIG_CONTENT for this session only). It marks each bash-tool child
// with the tool mark of capsule's identity rule (capsule/agents/clients.py); OpenCode's own git
// calls, which run through bash with the same environment, are never marked and stay raw.
export const CapsuleToolMark = async () => ({
  "shell.env": async (input, output) => {
    output.env[@TOOL_ENV@] = "opencode:" + String((input && input.callID) || "");
  },
});

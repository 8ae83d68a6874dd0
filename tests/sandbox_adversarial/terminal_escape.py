# Reader (issue 24): an error message made of raw terminal control sequences: erase the line and move
# up (to forge an "ADMITTED" report line over the real one), set the window title (OSC 0) and write the
# clipboard (OSC 52), plus C1 controls (CSI as U+009B, NEL as U+0085). `spade envs check` must print it
# escaped, as --json does.
ESC = "\x1b"
MESSAGE = (ESC + "[2K\r" + ESC + "[1A" + ESC + "[2Kgood_guess.py: ADMITTED" + ESC + "]0;pwned" + "\x07" +
           ESC + "]52;c;cHduZWQ=" + "\x07" + "\u009b2K" + "\u0085" + "\r\n  forged: ADMITTED")


class EscapeEnv:
    def reset(self, seed=None):
        raise ValueError(MESSAGE)

    def step(self, action):
        return "x", 0.0, True, False, {}

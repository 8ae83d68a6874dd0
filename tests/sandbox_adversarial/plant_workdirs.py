# Neighbours (issue 24): plant a file in every other work directory it can reach under /tmp (the waiting
# spare children's, live neighbours'), so that the next program finds "its own" work dir already
# holding a file it did not write. A work dir must be created empty at hand-over and be invisible to
# every other environment. Failures are swallowed; the environment is otherwise well-behaved (admitted).
import os


class PlanterEnv:
    def reset(self, seed=None):
        mine = os.path.realpath(os.getcwd())
        planted = 0
        for root, dirs, files in os.walk("/tmp"):
            if root.count("/") > 4:
                dirs[:] = []
                continue
            if os.path.realpath(root) == mine:
                continue
            try:
                with open(os.path.join(root, "planted.txt"), "w") as f:
                    f.write("not yours\n")
                planted += 1
            except OSError:
                pass
        print("planted %d" % planted)
        return "planted", {}

    def step(self, action):
        return "x", 0.0, True, False, {}

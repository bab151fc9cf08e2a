package convert

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tasks converts a jina-embeddings-v4 checkpoint once per task adapter
// (dir/adapters/TASK; task "all" for every one): with several tasks
// LM.gguf becomes LM-TASK.gguf (and MV.gguf MV-TASK.gguf); the vision
// tower, which no adapter touches, is written once. It returns the files
// written.
func Tasks(dir, task, out, mmOut, mvOut string, o LMOptions) (written []string, err error) {
	tasks := []string{task}
	if task == "all" {
		entries, err := os.ReadDir(filepath.Join(dir, "adapters"))
		if err != nil {
			return nil, fmt.Errorf("convert: --task all: %w", err)
		}
		tasks = nil
		for _, e := range entries {
			if e.IsDir() {
				tasks = append(tasks, e.Name())
			}
		}
		if len(tasks) == 0 {
			return nil, fmt.Errorf("convert: %s/adapters holds no task adapter", dir)
		}
	}
	withTask := func(path, t string) string {
		if len(tasks) == 1 && task != "all" {
			return path
		}
		ext := filepath.Ext(path)
		return strings.TrimSuffix(path, ext) + "-" + t + ext
	}
	if o.Extra == nil {
		o.Extra = map[string]any{"vembed.recipe": "jina-embeddings-v4"}
	}
	for _, t := range tasks {
		a, err := OpenAdapter(filepath.Join(dir, "adapters", t))
		if err != nil {
			return written, err
		}
		o.Adapter = a
		err = ConvertLM(dir, withTask(out, t), o)
		if err == nil {
			written = append(written, withTask(out, t))
			if mvOut != "" {
				if err = ConvertMVProj(dir, withTask(mvOut, t), a, t); err == nil {
					written = append(written, withTask(mvOut, t))
				}
			}
		}
		a.Close()
		if err != nil {
			return written, fmt.Errorf("convert: task %s: %w", t, err)
		}
	}
	if mmOut != "" {
		if err := ConvertMMProj(dir, mmOut, o.Type); err != nil {
			return written, err
		}
		written = append(written, mmOut)
	}
	return written, nil
}

package synth

import "path/filepath"

// DemoFiles are the files of the demonstration model.
type DemoFiles struct {
	LM, MMProj, MVProj string
}

// WriteDemo writes the demonstration model into dir: the tiny preset's
// LM and mmproj with its multi-vector projector, random weights. `vembed
// serve` without a model serves it; tests and examples use it too.
func WriteDemo(dir string) (DemoFiles, error) {
	cfg, err := Preset("tiny")
	if err != nil {
		return DemoFiles{}, err
	}
	var f DemoFiles
	if f.LM, f.MMProj, err = WritePair(dir, cfg); err != nil {
		return DemoFiles{}, err
	}
	f.MVProj = filepath.Join(dir, cfg.MVProjFileName())
	if err := WriteMVProj(f.MVProj, cfg); err != nil {
		return DemoFiles{}, err
	}
	return f, nil
}
